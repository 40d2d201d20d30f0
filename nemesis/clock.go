package nemesis

import (
	"context"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"time"

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
	// expired counts the leases a jump forward expired at once, read from
	// the nodes before and after it (history.ExpiredByClock).
	expired int64
}

// Events is the last window's count of leases its jump expired.
func (c *clockFault) Events() map[string]int64 {
	e := c.expired
	c.expired = 0
	return map[string]int64{history.ExpiredByClock: e}
}

// jump moves n's clock by offset, and counts the leases n held before
// that it no longer holds after: those the jump expired.
func (c *clockFault) jump(ctx context.Context, n *cluster.Node, offset time.Duration, drift int64) error {
	before, berr := c.env.Cluster.Holds(ctx, n)
	at := time.Now()
	if err := n.Clock.Set(offset, drift); err != nil {
		return err
	}
	if berr != nil || offset <= 0 {
		return nil
	}
	if after, err := c.env.Cluster.Holds(ctx, n); err == nil {
		// A lease that could have run out between the reads is no count.
		c.expired += cluster.LostFrom(before, after, time.Since(at)+100*time.Millisecond)
	}
	return nil
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
	names, err := c.start(ctx, c.env, rng, func(n *cluster.Node) error { return c.jump(ctx, n, offset, drift) })
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
