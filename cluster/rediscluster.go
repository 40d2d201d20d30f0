package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeTimeout is the cluster's cluster-node-timeout: how long a
// master must be unreachable before the others flag it failing.
const ClusterNodeTimeout = time.Second

// DefaultClusterMasters is the master count of the cluster topology.
const DefaultClusterMasters = 3

// upRedisCluster starts cfg.Nodes masters (n1..nN) with a replica each
// (n(N+1)..n(2N)), slots split evenly. Each node sits behind two proxies:
// a peer proxy on its client port, which it announces (so replication,
// and the addresses CLUSTER SLOTS hands clients, go through it), and a
// bus proxy on its cluster bus port. Clients dial nodes directly
// (DialAddr maps a peer proxy to its node), so a fault made on the
// proxies cuts a node off from its replica and the bus while clients
// still reach it.
func (c *Cluster) upRedisCluster(ctx context.Context, cfg Config, b backend) error {
	for i := 1; i <= 2*cfg.Nodes; i++ {
		if err := c.withPortRetry(ctx, func() error {
			return c.startClusterNode(ctx, b, "n"+strconv.Itoa(i))
		}); err != nil {
			return err
		}
	}
	return c.formCluster(ctx, cfg.Nodes, cfg.ReplicationLag)
}

// startClusterNode starts one cluster-enabled node and its two proxies.
func (c *Cluster) startClusterNode(ctx context.Context, b backend, name string) error {
	host := b.host()
	pport, err := freePortOn(host)
	if err != nil {
		return err
	}
	bport, err := freePortOn(host)
	if err != nil {
		return err
	}
	busPort, err := b.busPort()
	if err != nil {
		return err
	}
	peerAddr, busAddr := net.JoinHostPort(host, strconv.Itoa(pport)), net.JoinHostPort(host, strconv.Itoa(bport))
	n, err := b.node(ctx, name, clusterArgs(peerAddr, busAddr, busPort))
	if err != nil {
		return err
	}
	if n.Peer, err = c.behindProxy(name+"-peer", host, pport, b.inner(n, 0)); err != nil {
		return err
	}
	if n.Bus, err = c.behindProxy(name+"-bus", host, bport, b.inner(n, busPort)); err != nil {
		return err
	}
	c.dialMap[n.Peer.Addr] = n.Addr
	return nil
}

// clusterArgs are a cluster node's settings: its bus on busPort, and the
// addresses of its peer and bus proxies announced as its own.
func clusterArgs(peer, bus string, busPort int) []string {
	host, pport, _ := net.SplitHostPort(peer)
	_, bport, _ := net.SplitHostPort(bus)
	return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", strconv.Itoa(busPort),
		"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout.Milliseconds())),
		"--cluster-announce-ip", host, "--cluster-announce-port", pport, "--cluster-announce-bus-port", bport,
		// A replica may take over however stale it is, and the other
		// masters keep serving while one's slots are without a master.
		"--cluster-replica-validity-factor", "0", "--cluster-require-full-coverage", "no",
		replSyncNow[0], replSyncNow[1]}
}

// replSyncNow starts a replica's full sync at once, not 5 s later in
// case more replicas come (a new replica, an old master rejoining, a
// master restarted empty): with the default, every kill of a master
// left its replicas unsynced for over 5 s, longer than the kill
// scenarios' interval, so a lock that waits for its replicas (WAIT)
// held nothing after the first kill of a run.
var replSyncNow = []string{"--repl-diskless-sync-delay", "0"}

// formCluster meets every node, gives each master its share of the slots
// and each its replica, then waits until every node agrees.
func (c *Cluster) formCluster(ctx context.Context, masters int, lag time.Duration) error {
	first := c.admin(c.Nodes[0])
	defer first.Close()
	for i, n := range c.Nodes {
		a := c.admin(n)
		id, err := a.ClusterMyID(ctx).Result()
		if err == nil && i < masters {
			lo, hi := i*16384/masters, (i+1)*16384/masters-1
			err = a.Do(ctx, "cluster", "addslotsrange", lo, hi).Err()
		}
		a.Close()
		if err != nil {
			return fmt.Errorf("cluster set-up on %s: %w", n.Name, err)
		}
		n.ID = id
		if i > 0 {
			if err := meet(ctx, first, n); err != nil {
				return fmt.Errorf("cluster meet %s: %w", n.Name, err)
			}
		}
	}
	// Every node must come to know every other. A handshake that does
	// not finish within the node timeout (1 s: a busy machine) is
	// dropped, and gossip does not bring the node back to the one that
	// dropped it (a fresh-clone CI run with the survey beside it: "n1
	// sees 5 nodes" for 30 s): a node whose view still lacks one meets
	// it again, every second.
	if err := c.waitCluster(ctx, func(v clusterView) bool { return len(v) == len(c.Nodes) }, c.meetMissing(ctx)); err != nil {
		return err
	}
	for i := masters; i < len(c.Nodes); i++ {
		a := c.admin(c.Nodes[i])
		err := a.Do(ctx, "cluster", "replicate", c.Nodes[i-masters].ID).Err()
		a.Close()
		if err != nil {
			return fmt.Errorf("cluster replicate %s: %w", c.Nodes[i].Name, err)
		}
	}
	if lag > 0 {
		// Replicas read their master's stream late: asynchronous
		// replication, made visible.
		for _, m := range c.Nodes[:masters] {
			if err := m.Peer.AddToxic("repl-lag", "latency", "downstream", fmt.Sprintf(`{"latency":%d}`, lag.Milliseconds())); err != nil {
				return err
			}
		}
	}
	if err := c.waitCluster(ctx, func(v clusterView) bool { return v.settled(masters) }, nil); err != nil {
		return err
	}
	return c.waitSynced(ctx, c.Nodes[:masters])
}

// waitSynced waits until each master's replica is online (its full sync
// done): before that, WAIT gets no acknowledgement and a failover would
// promote an empty replica.
func (c *Cluster) waitSynced(ctx context.Context, masters []*Node) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range masters {
		a := c.admin(m)
		err := poll(ctx, deadline, 50*time.Millisecond, func() error {
			info, err := a.Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "state=online") {
				return nil
			}
			return fmt.Errorf("%s: replica not in sync after 30s: %v %q", m.Name, err, info)
		})
		a.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// admin is a plain client to node n.
func (c *Cluster) admin(n *Node) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
}

// clusterEntry is one line of CLUSTER NODES.
type clusterEntry struct {
	id, addr, master string
	flags            []string
	slots            []string
}

func (e clusterEntry) is(flag string) bool {
	for _, f := range e.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// clusterView is one node's CLUSTER NODES.
type clusterView []clusterEntry

func parseClusterNodes(s string) clusterView {
	var v clusterView
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		v = append(v, clusterEntry{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], slots: f[8:]})
	}
	return v
}

// settled: no handshakes or failures, masters masters each with slots and
// a replica.
func (v clusterView) settled(masters int) bool {
	ms, reps := 0, 0
	for _, e := range v {
		switch {
		case e.is("handshake") || e.is("fail") || e.is("fail?") || e.is("noaddr"):
			return false
		case e.is("master") && len(e.slots) > 0:
			ms++
		case e.is("slave") && e.master != "-":
			reps++
		}
	}
	return ms == masters && reps == masters
}

// view reads node n's CLUSTER NODES, and errs if its cluster_state is
// not ok (the view is returned all the same: waitCluster meets the nodes
// it lacks).
func (c *Cluster) view(ctx context.Context, n *Node) (clusterView, error) {
	a := c.admin(n)
	defer a.Close()
	s, err := a.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	v := parseClusterNodes(s)
	info, err := a.ClusterInfo(ctx).Result()
	if err != nil {
		return v, err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return v, fmt.Errorf("%s: cluster_state is not ok", n.Name)
	}
	return v, nil
}

// meetMissing returns what waitCluster calls for a node whose view lacks
// others: it meets them again, at most once a second for each node.
func (c *Cluster) meetMissing(ctx context.Context) func(*Node, clusterView) {
	met := map[*Node]time.Time{}
	return func(n *Node, v clusterView) {
		if time.Since(met[n]) < time.Second {
			return
		}
		met[n] = time.Now()
		a := c.admin(n)
		defer a.Close()
		for _, o := range c.Nodes {
			if o != n && !v.has(o.Peer.Addr) {
				_ = meet(ctx, a, o)
			}
		}
	}
}

// meet introduces node o to the node a is a client of.
func meet(ctx context.Context, a *redis.Client, o *Node) error {
	host, port, _ := net.SplitHostPort(o.Peer.Addr)
	_, bport, _ := net.SplitHostPort(o.Bus.Addr)
	return a.Do(ctx, "cluster", "meet", host, port, bport).Err()
}

// has says whether the view knows the node announced at addr.
func (v clusterView) has(addr string) bool {
	for _, e := range v {
		if e.addr == addr {
			return true
		}
	}
	return false
}

// waitCluster waits until every node's view satisfies ok and its
// cluster_state is ok; behind, if set, is told of a node whose view does
// not yet (it may do something about it).
func (c *Cluster) waitCluster(ctx context.Context, ok func(clusterView) bool, behind func(*Node, clusterView)) error {
	return poll(ctx, time.Now().Add(30*time.Second), 100*time.Millisecond, func() error {
		var first error
		for _, n := range c.Nodes {
			v, err := c.view(ctx, n)
			if err == nil && !ok(v) {
				err = fmt.Errorf("%s sees %d nodes, not settled", n.Name, len(v))
			}
			if err != nil && behind != nil && v != nil {
				behind(n, v)
			}
			if err != nil && first == nil {
				first = fmt.Errorf("redis cluster not formed after 30s: %v", err)
			}
		}
		return first
	})
}

// byID returns our node with the cluster node id.
func (c *Cluster) byID(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// currentView is the CLUSTER NODES of the first node that answers.
func (c *Cluster) currentView(ctx context.Context) (clusterView, error) {
	var last error
	for _, n := range c.Nodes {
		v, err := c.view(ctx, n)
		if err == nil {
			return v, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no cluster node answers: %w", last)
}

// ClusterShard is a master and its replica, as the cluster now has them.
type ClusterShard struct {
	Master, Replica *Node
	Slots           []string
}

// Shards returns the cluster's masters that serve slots and have a
// replica that is not failing, in node order.
func (c *Cluster) Shards(ctx context.Context) ([]ClusterShard, error) {
	v, err := c.currentView(ctx)
	if err != nil {
		return nil, err
	}
	var shards []ClusterShard
	for _, m := range v {
		if !m.is("master") || m.is("fail") || m.is("fail?") || len(m.slots) == 0 {
			continue
		}
		s := ClusterShard{Master: c.byID(m.id), Slots: m.slots}
		for _, r := range v {
			if r.master == m.id && !r.is("fail") && !r.is("fail?") {
				s.Replica = c.byID(r.id)
			}
		}
		if s.Master != nil && s.Replica != nil {
			shards = append(shards, s)
		}
	}
	if len(shards) == 0 {
		return nil, errors.New("no master with a live replica")
	}
	return shards, nil
}

// TakeOver has replica r take its master's slots now: CLUSTER FAILOVER
// FORCE (its master is down; the other masters vote) or TAKEOVER (no
// vote: the master is cut off and must not be asked); with
// Config.Failover detect, the cluster's failure detector decides.
func (c *Cluster) TakeOver(ctx context.Context, r *Node, mode string) error {
	if c.failover == FailoverDetect {
		return nil // the replica finds its master failing and is elected on its own
	}
	a := c.admin(r)
	defer a.Close()
	if err := a.Do(ctx, "cluster", "failover", mode).Err(); err != nil {
		// The cluster may have been quicker: a replica whose master was
		// killed is elected on its own after cluster-node-timeout, which a
		// busy machine can reach before the command comes (a fresh-clone
		// CI run beside the survey: "ERR You should send CLUSTER FAILOVER
		// to a replica"). It took over all the same.
		if role, rerr := a.Do(ctx, "role").Slice(); rerr == nil && len(role) > 0 && role[0] == "master" {
			return nil
		}
		return fmt.Errorf("cluster failover %s on %s: %w", mode, r.Name, err)
	}
	return nil
}

// Rejoin waits until the cluster has settled again after a fault that
// made another node take n's slots ended: every node sees every master
// with slots and a replica, n among the replicas, and no node failing.
func (c *Cluster) Rejoin(ctx context.Context, n *Node) error {
	if err := c.waitCluster(ctx, func(v clusterView) bool { return v.settled(len(c.Nodes) / 2) }, nil); err != nil {
		return fmt.Errorf("%s rejoining: %w", n.Name, err)
	}
	return nil
}

// Reshard moves one slot that holds keys (a key chosen by rng among the
// masters' keys) from its master to another, the way redis-cli
// --cluster reshard does: IMPORTING on the target, MIGRATING on the
// source, MIGRATE of its keys (TTLs kept), then SETSLOT NODE everywhere.
// Clients meanwhile get ASK redirects for keys already moved. It returns
// the slot and the nodes it moved between.
func (c *Cluster) Reshard(ctx context.Context, rng *rand.Rand) (int, *Node, *Node, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	if len(shards) < 2 {
		return 0, nil, nil, errors.New("reshard needs two masters")
	}
	i := rng.IntN(len(shards))
	from, to := shards[i].Master, shards[(i+1+rng.IntN(len(shards)-1))%len(shards)].Master
	src, dst := c.admin(from), c.admin(to)
	defer src.Close()
	defer dst.Close()
	key, err := src.RandomKey(ctx).Result()
	if err != nil {
		return 0, from, to, fmt.Errorf("reshard: no key on %s: %w", from.Name, err)
	}
	slot, err := src.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, from, to, err
	}
	s := int(slot)
	if err := dst.Do(ctx, "cluster", "setslot", s, "importing", from.ID).Err(); err != nil {
		return s, from, to, fmt.Errorf("reshard: %w", err)
	}
	if err := src.Do(ctx, "cluster", "setslot", s, "migrating", to.ID).Err(); err != nil {
		return s, from, to, fmt.Errorf("reshard: %w", err)
	}
	// The target as the nodes reach it: its peer proxy.
	host, port, _ := net.SplitHostPort(to.Peer.Addr)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, s, 100).Result()
		if err != nil {
			return s, from, to, fmt.Errorf("reshard: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		args := append([]any{"migrate", host, port, "", 0, 5000, "auth", c.Password, "keys"}, anys(keys)...)
		if err := src.Do(ctx, args...).Err(); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			return s, from, to, fmt.Errorf("reshard: migrate: %w", err)
		}
	}
	for _, a := range []*redis.Client{dst, src} {
		if err := a.Do(ctx, "cluster", "setslot", s, "node", to.ID).Err(); err != nil {
			return s, from, to, fmt.Errorf("reshard: %w", err)
		}
	}
	return s, from, to, nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
