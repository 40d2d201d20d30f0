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

// failoverKind is the "failover" fault.
var failoverKind = Kind{Name: "failover", Topologies: []string{cluster.Sentinel}, Description: "kill the master (topology sentinel); Sentinel promotes a replica; the old master restarts as a replica", Redis: true,
	new: func(e Env) (Fault, error) { return &failover{env: e}, nil }}
