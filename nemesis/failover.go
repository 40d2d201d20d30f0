package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ctxwait"
)

// failover kills the master Sentinel names and has Sentinel promote a
// replica (see cluster.Failover). At the end of the window the old master is
// restarted and Sentinel makes it a replica of the new one. Whatever the
// old master had not yet replicated is lost, lock keys included.
type failover struct {
	env Env
	target
	events map[string]int64
	// watch records what the promoted node does to keys once it serves;
	// lost is, for each lease the promotion lost, its value and when it
	// would have expired: a grant of its key before then is history.LostRetaken.
	watch *cluster.KeyWatch
	lost  map[string]cluster.Due
	retakes
}

// Events is the last window's count of leases the promotion lost, and of
// those whose key was granted again while they would still have held it.
func (f *failover) Events() map[string]int64 {
	e := f.events
	f.events = nil
	return e
}

// holdsBefore reads the leases m holds just before it goes down.
func (f *failover) holdsBefore(ctx context.Context, m *cluster.Node) (cluster.Holdings, time.Time) {
	h, err := f.env.Cluster.Holds(ctx, m)
	if err != nil {
		return nil, time.Time{}
	}
	return h, time.Now()
}

// countLost counts the leases of before, live past the read of the
// promoted node, that it lacks (history.LostAtPromotion). Without both reads the
// window shows no loss (a run the figure does not count: conservative).
func (f *failover) countLost(ctx context.Context, before cluster.Holdings, at time.Time, promoted *cluster.Node) {
	if before == nil || promoted == nil {
		return
	}
	after, err := f.env.Cluster.Holds(ctx, promoted)
	if err != nil {
		return
	}
	// A lease that could have expired between the two reads is no loss.
	margin := time.Since(at) + 100*time.Millisecond
	lost := cluster.LostKeys(before, after, margin)
	f.events = map[string]int64{history.LostAtPromotion: int64(len(lost))}
	if len(lost) == 0 {
		return
	}
	// The bug's event is a lost lease's key granted again while the
	// lease would still have held it: watch the promoted node for it
	// (grants before the watch began are missed: conservative).
	if f.lost = cluster.Dues(lost, at, margin); len(f.lost) == 0 {
		return
	}
	f.watch, _ = f.env.Cluster.WatchKeys(ctx, promoted)
}

// closeWatch counts the lost leases whose key the promoted node granted
// again while they would still have held it (history.LostRetaken). Clients may
// reach the promoted node only once the old one is back and redirects
// them (a cluster client keeps trying a dead node), so it is called
// after the heal and waits for such a grant, up to retakenWait or until
// every lost lease would have expired, whichever is first; it returns
// as soon as one is seen.
func (f *failover) closeWatch(ctx context.Context) {
	w, lost := f.watch, f.lost
	f.watch, f.lost = nil, nil
	if w == nil {
		return
	}
	if f.events == nil {
		f.events = map[string]int64{}
	}
	f.await(ctx, w, lost)
	f.events[history.LostRetaken] = int64(len(f.retaken))
}

// waitRetaken waits, up to retakenWait or until every lost lease would
// have expired, for w's node to grant a lost lease's key again while the
// lease would still have held it; it returns as soon as one is seen,
// with every such grant by then, and closes w.
func waitRetaken(ctx context.Context, w *cluster.KeyWatch, lost map[string]cluster.Due) []history.Retake {
	until := time.Now().Add(retakenWait)
	latest := int64(0)
	for _, d := range lost {
		latest = max(latest, d.Until)
	}
	until = time.Unix(0, min(until.UnixNano(), latest))
	for len(cluster.SetBefore(w.Log(), lost)) == 0 && time.Now().Before(until) {
		if !ctxwait.Sleep(ctx, 50*time.Millisecond) {
			break
		}
	}
	return cluster.SetBefore(w.Close(), lost)
}

// retakes are the grants a window's history.LostRetaken counts, kept for
// Retaken, and when the fault was healed, where its Stop went on to wait
// for them (Healer).
type retakes struct {
	retaken []history.Retake
	healed  time.Time
}

// await waits for w's grants of lost leases' keys (waitRetaken) and keeps
// them; its first call in a window marks the heal.
func (r *retakes) await(ctx context.Context, w *cluster.KeyWatch, lost map[string]cluster.Due) {
	if r.healed.IsZero() {
		r.healed = time.Now()
	}
	r.retaken = append(r.retaken, waitRetaken(ctx, w, lost)...)
}

// Healed is when the last window's Stop had healed the fault, if it then
// waited for grants (zero otherwise); called after Stop, it starts the
// next window's anew.
func (r *retakes) Healed() time.Time {
	h := r.healed
	r.healed = time.Time{}
	return h
}

// Retaken hands over the last window's grants of lost leases' keys
// (Retaker), each with the lost lease's token and the Unix ns at which
// the node was heard setting the key.
func (r *retakes) Retaken() []history.Retake {
	rs := r.retaken
	r.retaken = nil
	return rs
}

// retakenWait bounds how long a failover's heal waits to see a lost
// lease's key granted again.
const retakenWait = 5 * time.Second

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
	before, at := f.holdsBefore(ctx, m)
	if err := crash(m); err != nil {
		return []string{m.Name}, err
	}
	if err := f.env.Cluster.Failover(ctx); err != nil {
		return []string{m.Name}, err
	}
	promoted, _ := f.env.Cluster.Promoted(ctx, m)
	f.countLost(ctx, before, at, promoted)
	return []string{m.Name}, nil
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
	before, at := f.holdsBefore(ctx, sh.Master)
	if err := crash(sh.Master); err != nil {
		return names, err
	}
	if err := f.env.Cluster.TakeOver(ctx, sh.Replica, "force"); err != nil {
		return names, err
	}
	f.countLost(ctx, before, at, sh.Replica)
	return names, nil
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
	defer f.closeWatch(ctx)
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
