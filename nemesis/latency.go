package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// latency delays every reply from a primary to the clients by half the TTL:
// a client that gets its lock late has less of it left (its deadline runs
// from the call).
type latency struct {
	env Env
	target
}

func (l *latency) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	attrs := fmt.Sprintf(`{"latency":%d,"jitter":%d}`, (l.env.TTL / 2).Milliseconds(), (l.env.TTL / 10).Milliseconds())
	return l.start(ctx, l.env, rng, func(n *cluster.Node) error {
		if n.Client == nil {
			return fmt.Errorf("%s has no client proxy", n.Name)
		}
		return n.Client.AddToxic("latency", "latency", "downstream", attrs)
	})
}

func (l *latency) Stop(context.Context) error {
	return l.stop(func(n *cluster.Node) error { return n.Client.RemoveToxics("latency") })
}

// latencyKind is the "latency" fault.
var latencyKind = Kind{Needs: Needs{Redis: true, ClientProxies: true}, Name: "latency", Description: "delay a primary's (--nemesis-targets) replies to clients by TTL/2 (toxiproxy latency toxic)",
	New: func(e Env) (Fault, error) { return &latency{env: e}, nil }}
