package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// partition cuts the master off from its replicas and sentinels (a timeout
// toxic, both ways, on the proxy they reach it through) while clients,
// who dial it directly, still reach it: the sentinels promote a replica
// and two masters take writes (split brain).
type partition struct {
	env Env
	target
}

var partitionToxics = []string{"partition-down", "partition-up"}

func (p *partition) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	m, err := sentinelMaster(ctx, p.env, "partition")
	if err != nil {
		return nil, err
	}
	if m.Peer == nil {
		return nil, fmt.Errorf("%s has no peer proxy", m.Name)
	}
	p.set(m)
	// timeout 0: data is dropped, connections stay open, until removed.
	if err := m.Peer.AddToxic("partition-down", "timeout", "downstream", `{"timeout":0}`); err != nil {
		return nil, err
	}
	if err := m.Peer.AddToxic("partition-up", "timeout", "upstream", `{"timeout":0}`); err != nil {
		return []string{m.Name}, err
	}
	// The majority side promotes a replica (see cluster.Failover); the old
	// master, unreachable, stays a master until the partition heals.
	return []string{m.Name}, p.env.Cluster.Failover(ctx)
}

func (p *partition) Stop(context.Context) error {
	n := p.take()
	if n == nil {
		return nil
	}
	return n.Peer.RemoveToxics(partitionToxics...)
}

// partitionKind is the "partition" fault.
var partitionKind = Kind{Name: "partition", Topologies: []string{cluster.Sentinel}, Description: "cut the master off from its replicas and sentinels while clients still reach it (topology sentinel): split brain", Redis: true,
	new: func(e Env) (Fault, error) { return &partition{env: e}, nil }}
