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
	// deposed and promoted record what the two masters do to keys after
	// the promotion; events is the last window's count.
	deposed, promoted *cluster.KeyWatch
	events            map[string]int64
}

// Events is the last window's count: the keys the deposed master set
// once cut off (GrantedByDeposed: grants no replica received), and those
// it and the promoted master held at once (GrantedBothSides).
func (p *partition) Events() map[string]int64 {
	e := p.events
	p.events = nil
	return e
}

// watchDeposed starts recording what the master m does to keys, from
// the moment it is cut off: every grant from here on reaches no replica.
func (p *partition) watchDeposed(ctx context.Context, m *cluster.Node) {
	p.deposed, _ = p.env.Cluster.WatchKeys(ctx, m)
}

// watchPromoted starts recording what the promoted master does, once it
// is promoted. Without both records the window shows no grant (a run the
// figures do not count: conservative).
func (p *partition) watchPromoted(ctx context.Context, n *cluster.Node) {
	if p.deposed == nil || n == nil {
		return
	}
	p.promoted, _ = p.env.Cluster.WatchKeys(ctx, n)
}

// closeWatch ends the records, before the partition heals.
func (p *partition) closeWatch() {
	d, pr := p.deposed, p.promoted
	p.deposed, p.promoted = nil, nil
	switch {
	case d == nil:
		return
	case pr == nil:
		d.Close()
		return
	}
	sets := d.Sets()
	both := cluster.HeldOnBoth(d.Close(), pr.Close())
	p.events = map[string]int64{GrantedByDeposed: sets, GrantedBothSides: both}
}

var partitionToxics = []string{"partition-down", "partition-up"}

func (p *partition) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	if p.env.Cluster.Topology == cluster.RedisCluster {
		return p.startCluster(ctx, rng)
	}
	m, err := sentinelMaster(ctx, p.env, "partition")
	if err != nil {
		return nil, err
	}
	if m.Peer == nil {
		return nil, fmt.Errorf("%s has no peer proxy", m.Name)
	}
	p.set(m)
	if err := cut(m.Peer); err != nil {
		return []string{m.Name}, err
	}
	p.watchDeposed(ctx, m)
	// The majority side promotes a replica (see cluster.Failover); the old
	// master, unreachable, stays a master until the partition heals.
	if err := p.env.Cluster.Failover(ctx); err != nil {
		return []string{m.Name}, err
	}
	promoted, _ := p.env.Cluster.Promoted(ctx, m)
	p.watchPromoted(ctx, promoted)
	return []string{m.Name}, nil
}

// startCluster cuts a master chosen by rng off its replica and the
// cluster bus (timeouts on its peer and bus proxies: replication stops,
// no node reaches it) while clients still do, and has its replica take
// its slots without a vote (CLUSTER FAILOVER TAKEOVER), as the majority
// side would after cluster-node-timeout. The old master learns of it and
// turns replica; what it took while cut off is lost.
func (p *partition) startCluster(ctx context.Context, rng *rand.Rand) ([]string, error) {
	sh, err := pickShard(ctx, p.env.Cluster, rng)
	if err != nil {
		return nil, err
	}
	p.set(sh.Master)
	names := []string{sh.Master.Name, sh.Replica.Name}
	for _, px := range []*cluster.Proxy{sh.Master.Peer, sh.Master.Bus} {
		if err := cut(px); err != nil {
			return names, err
		}
	}
	p.watchDeposed(ctx, sh.Master)
	if err := p.env.Cluster.TakeOver(ctx, sh.Replica, "takeover"); err != nil {
		return names, err
	}
	p.watchPromoted(ctx, sh.Replica)
	return names, nil
}

// cut drops everything through px, both ways, until healed.
func cut(px *cluster.Proxy) error {
	// timeout 0: data is dropped, connections stay open, until removed.
	if err := px.AddToxic("partition-down", "timeout", "downstream", `{"timeout":0}`); err != nil {
		return err
	}
	return px.AddToxic("partition-up", "timeout", "upstream", `{"timeout":0}`)
}

func (p *partition) Stop(ctx context.Context) error {
	p.closeWatch()
	n := p.takeOne()
	if n == nil {
		return nil
	}
	if n.Bus == nil {
		return n.Peer.RemoveToxics(partitionToxics...)
	}
	for _, px := range []*cluster.Proxy{n.Peer, n.Bus} {
		if err := px.RemoveToxics(partitionToxics...); err != nil {
			return err
		}
	}
	return p.env.Cluster.Rejoin(ctx, n)
}

// partitionKind is the "partition" fault.
var partitionKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "partition", Topologies: []string{cluster.Sentinel, cluster.RedisCluster}, Description: "cut the master off from its replicas and sentinels (cluster: a master off its replica and the cluster bus) while clients still reach it: split brain",
	New: func(e Env) (Fault, error) { return &partition{env: e}, nil }}
