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

func (f *failover) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	if f.env.Cluster.Topology == cluster.RedisCluster {
		return f.startCluster(ctx, rng)
	}
	m, err := sentinelMaster(ctx, f.env, "failover")
	if err != nil {
		return nil, err
	}
	f.set(m)
	if err := crash(m); err != nil {
		return []string{m.Name}, err
	}
	return []string{m.Name}, f.env.Cluster.Failover(ctx)
}

// startCluster kills a master chosen by rng and has its replica take
// over at once (CLUSTER FAILOVER FORCE: the other masters vote), as the
// cluster would after cluster-node-timeout.
func (f *failover) startCluster(ctx context.Context, rng *rand.Rand) ([]string, error) {
	sh, err := pickShard(ctx, f.env.Cluster, rng)
	if err != nil {
		return nil, err
	}
	f.set(sh.Master)
	names := []string{sh.Master.Name, sh.Replica.Name}
	if err := crash(sh.Master); err != nil {
		return names, err
	}
	return names, f.env.Cluster.TakeOver(ctx, sh.Replica, "force")
}

// crash kills a master together with the replication stream it had not
// yet delivered: its peer proxy is cut first, since the stream that
// --repl-lag holds in the proxy stands for writes still in the master's
// buffers, which die with it (delivered after the kill, they would reach
// a replica that a real crash leaves without them).
func crash(m *cluster.Node) error {
	if err := cut(m.Peer); err != nil {
		return err
	}
	return m.Kill()
}

func (f *failover) Stop(ctx context.Context) error {
	n := f.takeOne()
	if n == nil {
		return nil
	}
	// Reachable again through its peer proxy, so that Sentinel (the
	// cluster) can make it a replica.
	if err := n.Peer.RemoveToxics(partitionToxics...); err != nil {
		return err
	}
	if err := n.Restart(ctx, f.env.Cluster.Password); err != nil {
		return err
	}
	if f.env.Cluster.Topology == cluster.RedisCluster {
		return f.env.Cluster.Rejoin(ctx, n)
	}
	return nil
}

// failoverKind is the "failover" fault.
var failoverKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "failover", Topologies: []string{cluster.Sentinel, cluster.RedisCluster}, Description: "kill the master (topology sentinel; cluster: a master); Sentinel (the cluster) promotes its replica; the old master restarts as a replica",
	New: func(e Env) (Fault, error) { return &failover{env: e}, nil }}
