package nemesis

import (
	"context"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// clockFault shifts one node's wall clock (Redis's TTLs follow it, through
// the clock shim): a jump forward or back by twice the TTL, or a drift at
// twice real speed, chosen by the seed (forwardOnly: always the jump
// forward). Stop puts the clock back on real time.
type clockFault struct {
	env         Env
	forwardOnly bool
	target
}

func (c *clockFault) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	mode := 0
	if !c.forwardOnly {
		mode = rng.IntN(3)
	}
	jump := 2 * c.env.TTL
	offset, drift, how := jump, int64(0), "+"+jump.String()
	switch mode {
	case 1:
		offset, how = -jump, "-"+jump.String()
	case 2:
		offset, drift, how = 0, 1e9, "drift x2"
	}
	names, err := c.start(ctx, c.env, rng, func(n *cluster.Node) error { return n.Clock.Set(offset, drift) })
	return append(names, how), err
}

func (c *clockFault) Stop(context.Context) error {
	return c.stop(func(n *cluster.Node) error { return n.Clock.Set(0, 0) })
}

// clockKind is the "clock" fault.
var clockKind = Kind{Needs: Needs{Redis: true, Clock: true, Servers: true}, Name: "clock", Description: "shift a Redis node's wall clock (its TTLs follow): a jump forward or back by 2x the TTL, or a drift at twice real speed, chosen by the seed",
	New: func(e Env) (Fault, error) { return &clockFault{env: e}, nil }}

// clockJumpKind is the "clock-jump" fault.
var clockJumpKind = Kind{Needs: Needs{Redis: true, Clock: true, Servers: true}, Name: "clock-jump", Description: "jump a Redis node's wall clock forward by 2x the TTL: its keys expire at once",
	New: func(e Env) (Fault, error) { return &clockFault{env: e, forwardOnly: true}, nil }}
