package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// latency delays every reply from a node to the clients by half the TTL:
// a client that gets its lock late has less of it left (its deadline runs
// from the call).
type latency struct {
	env Env
	target
}

func (l *latency) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	n, err := l.env.Cluster.Master(ctx)
	if err != nil {
		return nil, err
	}
	if n.Client == nil {
		return nil, fmt.Errorf("%s has no client proxy", n.Name)
	}
	l.set(n)
	return []string{n.Name}, n.Client.AddToxic("latency", "latency", "downstream",
		fmt.Sprintf(`{"latency":%d,"jitter":%d}`, (l.env.TTL/2).Milliseconds(), (l.env.TTL/10).Milliseconds()))
}

func (l *latency) Stop(context.Context) error {
	n := l.take()
	if n == nil {
		return nil
	}
	return n.Client.RemoveToxics("latency")
}

// latencyKind is the "latency" fault.
var latencyKind = Kind{Name: "latency", ClientProxies: true, Description: "delay the master's replies to clients by TTL/2 (toxiproxy latency toxic)", Redis: true,
	new: func(e Env) (Fault, error) { return &latency{env: e}, nil }}
