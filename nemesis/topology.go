package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// failover kills the master Sentinel names and has Sentinel promote a
// replica (see cluster.Failover). At the end of the window the old master is
// restarted and Sentinel makes it a replica of the new one. Whatever the
// old master had not yet replicated is lost, lock keys included.
type failover struct {
	env Env
	target
}

// sentinelMaster is the master Sentinel names, for faults that need the
// sentinel topology.
func sentinelMaster(ctx context.Context, env Env, fault string) (*cluster.Node, error) {
	if len(env.Cluster.Sentinels) == 0 {
		return nil, fmt.Errorf("%s needs --topology sentinel", fault)
	}
	return env.Cluster.Master(ctx)
}

func (f *failover) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	m, err := sentinelMaster(ctx, f.env, "failover")
	if err != nil {
		return nil, err
	}
	f.set(m)
	if err := m.Kill(); err != nil {
		return []string{m.Name}, err
	}
	return []string{m.Name}, f.env.Cluster.Failover(ctx)
}

func (f *failover) Stop(ctx context.Context) error {
	n := f.take()
	if n == nil {
		return nil
	}
	return n.Restart(ctx, f.env.Cluster.Password)
}

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
