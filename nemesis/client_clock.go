package nemesis

import (
	"context"
	"math/rand/v2"
	"time"
)

// clientClock makes chosen clients' own clocks go wrong, holders first
// (workload.Runner.SkewClients): each start picks one of three ways, a
// clock that runs at half speed, one set back by a TTL, or one that runs
// at 1.5 times speed. A slow or set-back clock keeps its client working
// after its lease expired on Redis; a fast one makes it leave early.
type clientClock struct{ env Env }

func (c *clientClock) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	rate, jump, how := 0.5, time.Duration(0), "slow x0.5"
	switch rng.IntN(3) {
	case 1:
		rate, jump, how = 1, c.env.TTL, "back "+c.env.TTL.String()
	case 2:
		rate, how = 1.5, "fast x1.5"
	}
	return append(procs(c.env.Clients.SkewClients(rng, clientsPerFault, rate, jump)), how), nil
}

func (c *clientClock) Stop(context.Context) error { c.env.Clients.HealClients(); return nil }

// clientClockKind is the "client-clock" fault.
var clientClockKind = Kind{Needs: Needs{Clients: true}, Name: "client-clock",
	Description: "the clocks 3 clients (holders first) time their leases by run slow (x0.5), jump back a TTL, or run fast (x1.5) for the window: a client believes it holds a lease Redis has expired",
	New:         func(e Env) (Fault, error) { return &clientClock{env: e}, nil }}
