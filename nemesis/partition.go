package nemesis

import (
	"context"
	"fmt"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"time"

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
	// the promotion (cut and up are the nodes); events is the last
	// window's count.
	deposed, promoted *cluster.KeyWatch
	cut, up           *cluster.Node
	events            map[string]int64
	retakes
}

// Events is the last window's count: the keys the deposed master set
// once cut off (history.GrantedByDeposed: grants no replica received), those it
// and the promoted master held at once (history.GrantedBothSides), the leases
// the deposed master held at the heal that the promoted one lacked
// (history.LostAtHeal: the heal makes it a replica, which drops them), and
// those of them whose key the promoted master granted again while they
// would still have held it (history.LostRetaken, with its grants: Retaken).
func (p *partition) Events() map[string]int64 {
	e := p.events
	p.events = nil
	return e
}

// watchDeposed starts recording what the master m does to keys, from
// the moment it is cut off: every grant from here on reaches no replica.
func (p *partition) watchDeposed(ctx context.Context, m *cluster.Node) {
	p.deposed, _ = p.env.Cluster.WatchKeys(ctx, m)
	p.cut = m
}

// watchPromoted starts recording what the promoted master does, once it
// is promoted. Without both records the window shows no grant (a run the
// figures do not count: conservative).
func (p *partition) watchPromoted(ctx context.Context, n *cluster.Node) {
	if p.deposed == nil || n == nil {
		return
	}
	p.promoted, _ = p.env.Cluster.WatchKeys(ctx, n)
	p.up = n
}

// beforeHeal ends the deposed master's record and reads, on direct
// connections, the leases it holds that the promoted master lacks (or
// holds under another token): the heal turns it into the promoted one's
// replica, which drops them while their holders may still hold them. It
// returns them, each with when it would have expired; the promoted
// master's record goes on, for the grants of their keys after the heal.
func (p *partition) beforeHeal(ctx context.Context) map[string]cluster.Due {
	d, pr := p.deposed, p.promoted
	p.deposed = nil
	switch {
	case d == nil:
		return nil
	case pr == nil:
		d.Close()
		return nil
	}
	sets := d.Sets()
	both := cluster.HeldOnBoth(d.Close(), pr.Log())
	p.events = map[string]int64{history.GrantedByDeposed: sets, history.GrantedBothSides: both}
	before, err := p.env.Cluster.Holds(ctx, p.cut)
	if err != nil {
		return nil
	}
	at := time.Now()
	after, err := p.env.Cluster.Holds(ctx, p.up)
	if err != nil {
		return nil
	}
	// A lease that could have expired between the reads is no loss.
	margin := time.Since(at) + 100*time.Millisecond
	lost := cluster.LostKeys(before, after, margin)
	p.events[history.LostAtHeal] = int64(len(lost))
	return cluster.Dues(lost, at, margin)
}

// afterHeal waits, as a failover's heal does, for the promoted master
// to grant a lost lease's key again while the lease would still have
// held it (clients reach it once the healed master turns them away),
// and ends its record.
func (p *partition) afterHeal(ctx context.Context, lost map[string]cluster.Due) {
	pr := p.promoted
	p.promoted = nil
	if pr == nil {
		return
	}
	if len(lost) == 0 || p.events == nil {
		pr.Close()
		return
	}
	p.await(ctx, pr, lost)
	p.events[history.LostRetaken] = int64(len(p.retaken))
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
	lost := p.beforeHeal(ctx)
	n := p.takeOne()
	if n == nil {
		p.afterHeal(ctx, nil)
		return nil
	}
	if err := p.heal(ctx, n); err != nil {
		p.afterHeal(ctx, nil)
		return err
	}
	p.afterHeal(ctx, lost)
	return nil
}

// heal removes the partition from n. On Sentinel it then makes n a
// replica of the promoted master, as the sentinels would on their next
// INFO round: left to them, that took longer than the rest of a run, the
// deposed master took its clients' writes to the end, and a lock whose
// clients stay on one connection (redis-py's pool, tooz, the PHP locks)
// never met the heal that drops the leases it granted.
func (p *partition) heal(ctx context.Context, n *cluster.Node) error {
	if n.Bus == nil {
		if err := n.Peer.RemoveToxics(partitionToxics...); err != nil {
			return err
		}
		return p.env.Cluster.Demote(ctx, n)
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
