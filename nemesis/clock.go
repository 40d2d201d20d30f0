package nemesis

import (
	"context"
	"math/rand/v2"
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
	n, err := pickNode(ctx, c.env.Cluster, rng)
	if err != nil {
		return nil, err
	}
	mode := 0
	if !c.forwardOnly {
		mode = rng.IntN(3)
	}
	c.set(n)
	jump := 2 * c.env.TTL
	switch mode {
	case 0:
		return []string{n.Name, "+" + jump.String()}, n.Clock.Set(jump, 0)
	case 1:
		return []string{n.Name, "-" + jump.String()}, n.Clock.Set(-jump, 0)
	}
	return []string{n.Name, "drift x2"}, n.Clock.Set(0, 1e9)
}

func (c *clockFault) Stop(context.Context) error {
	if n := c.take(); n != nil {
		return n.Clock.Set(0, 0)
	}
	return nil
}

// clockKind is the "clock" fault.
var clockKind = Kind{Name: "clock", Clock: true, Redis: true, Description: "shift a Redis node's wall clock (its TTLs follow): a jump forward or back by 2x the TTL, or a drift at twice real speed, chosen by the seed",
	new: func(e Env) (Fault, error) { return &clockFault{env: e}, nil }}

// clockJumpKind is the "clock-jump" fault.
var clockJumpKind = Kind{Name: "clock-jump", Clock: true, Redis: true, Description: "jump a Redis node's wall clock forward by 2x the TTL: its keys expire at once",
	new: func(e Env) (Fault, error) { return &clockFault{env: e, forwardOnly: true}, nil }}
