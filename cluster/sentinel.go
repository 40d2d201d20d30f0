package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name Sentinel monitors the master under.
const MasterName = "lockcheck"

// sentinelConf is what every Sentinel of a run is told, on either
// backend: the master to monitor at host:port (a quorum of 2 of the 3),
// its password, and how soon to fail it over.
func sentinelConf(host, port, password string) string {
	return fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s 2\nsentinel auth-pass %[1]s %[4]s\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\nsentinel failover-timeout %[1]s 4000\nsentinel parallel-syncs %[1]s 1\n",
		MasterName, host, port, password, DownAfter.Milliseconds())
}

// DownAfter is Sentinel's down-after-milliseconds: how long a master must
// be unreachable before a failover starts.
const DownAfter = time.Second

// upSentinel starts one master and two replicas, each behind a peer proxy
// through which all replication and Sentinel traffic flows (the nodes
// announce the proxy addresses), and three sentinels. Clients dial the
// nodes directly (Cluster.Dial maps proxy addresses to node addresses), so
// a partition made on the peer proxies cuts the master off from its
// replicas and sentinels while clients still reach it. On containers the
// proxies listen on the network's gateway, so the same toxics make
// replication lag and partitions there.
func (c *Cluster) upSentinel(ctx context.Context, cfg Config, b backend) error {
	for i := 1; i <= 3; i++ {
		if err := c.withPortRetry(ctx, func() error { return c.startSentinelNode(ctx, cfg, b, i) }); err != nil {
			return err
		}
	}
	if err := c.waitReplicas(ctx); err != nil {
		return err
	}
	_, mport, _ := net.SplitHostPort(c.Nodes[0].Peer.Addr)
	for i := 1; i <= 3; i++ {
		if err := c.withPortRetry(ctx, func() error {
			_, err := b.sentinel(ctx, "s"+strconv.Itoa(i), sentinelConf(b.host(), mport, c.Password))
			return err
		}); err != nil {
			return err
		}
	}
	return c.waitSentinels(ctx)
}

// startSentinelNode starts node i of the sentinel topology (1: the
// master, then its replicas) behind its peer proxy.
func (c *Cluster) startSentinelNode(ctx context.Context, cfg Config, b backend, i int) error {
	name, host := "n"+strconv.Itoa(i), b.host()
	pport, err := freePortOn(host)
	if err != nil {
		return err
	}
	args := []string{"--replica-announce-ip", host, "--replica-announce-port", strconv.Itoa(pport), replSyncNow[0], replSyncNow[1]}
	if i > 1 {
		_, mport, _ := net.SplitHostPort(c.Nodes[0].Peer.Addr)
		args = append(args, "--replicaof", host, mport)
	}
	n, err := b.node(ctx, name, args)
	if err != nil {
		return err
	}
	peer, err := c.behindProxy(name+"-peer", host, pport, b.inner(n, 0))
	if err != nil {
		return err
	}
	if cfg.ReplicationLag > 0 {
		// Replicas and sentinels read the master's stream late:
		// asynchronous replication, made visible.
		if err := peer.AddToxic("repl-lag", "latency", "downstream",
			fmt.Sprintf(`{"latency":%d}`, cfg.ReplicationLag.Milliseconds())); err != nil {
			peer.stop()
			return err
		}
	}
	n.Peer = peer
	c.dialMap[peer.Addr] = n.Addr
	return nil
}

// waitReplicas waits until the master has both replicas in sync, so the
// sentinels find them on their first INFO instead of ten seconds later.
func (c *Cluster) waitReplicas(ctx context.Context) error {
	m := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr, Password: c.Password, Protocol: 2, DisableIdentity: true})
	defer m.Close()
	return poll(ctx, time.Now().Add(30*time.Second), 50*time.Millisecond, func() error {
		info, err := m.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:2") && strings.Count(info, "state=online") == 2 {
			return nil
		}
		return fmt.Errorf("master %s: replicas not in sync after 30s: %v %q", c.Nodes[0].Name, err, info)
	})
}

// waitSentinels waits until every sentinel knows both replicas and the
// other sentinels: only then can a failover happen.
func (c *Cluster) waitSentinels(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
		err := poll(ctx, deadline, 100*time.Millisecond, func() error {
			reps, err1 := sc.Replicas(ctx, MasterName).Result()
			sens, err2 := sc.Sentinels(ctx, MasterName).Result()
			if err1 == nil && err2 == nil && len(reps) == 2 && len(sens) == 2 {
				return nil
			}
			return fmt.Errorf("sentinel %s: does not see 2 replicas and 2 sentinels after 30s (%d, %d; %v %v)", s.Name, len(reps), len(sens), err1, err2)
		})
		sc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// SentinelAddrs returns the sentinels' addresses.
func (c *Cluster) SentinelAddrs() []string {
	var as []string
	for _, s := range c.Sentinels {
		as = append(as, s.Addr)
	}
	return as
}

// Promoted waits until the sentinels name a master other than old (a
// failover done), within the failover's bounds, and returns it.
func (c *Cluster) Promoted(ctx context.Context, old *Node) (*Node, error) {
	// Detection (DownAfter), the vote, the promotion: well inside this.
	deadline := time.Now().Add(DownAfter + 15*time.Second)
	for {
		m, err := c.Master(ctx)
		if err == nil && m != old {
			return m, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no replica promoted in place of %s (last: %v)", old.Name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Demote makes old, a master the sentinels replaced while it was cut
// off, a replica of the master they name now: what Sentinel does once it
// hears from old again (it sends old REPLICAOF after its next INFO round,
// seconds later), done at once, so that a split brain's heal turns the
// deposed master's clients away while the leases it granted are still
// held. The address is the one the sentinels name, which replicas reach.
func (c *Cluster) Demote(ctx context.Context, old *Node) error {
	if len(c.Sentinels) == 0 {
		return errors.New("demote: no sentinels")
	}
	var addr []string
	var err error
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
		addr, err = sc.GetMasterAddrByName(ctx, MasterName).Result()
		sc.Close()
		if err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("demote %s: %w", old.Name, err)
	}
	if hp := net.JoinHostPort(addr[0], addr[1]); old.Peer != nil && old.Peer.Addr == hp || old.Addr == hp {
		return nil // no replica was promoted: old is still the master
	}
	a := c.admin(old)
	defer a.Close()
	if err := a.Do(ctx, "REPLICAOF", addr[0], addr[1]).Err(); err != nil {
		return fmt.Errorf("demote %s: %w", old.Name, err)
	}
	return nil
}

// Master returns the node the sentinels currently name master.
func (c *Cluster) Master(ctx context.Context) (*Node, error) {
	if len(c.Sentinels) == 0 {
		if len(c.Nodes) == 0 {
			return nil, errors.New("no nodes")
		}
		return c.Nodes[0], nil
	}
	var last error
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
		addr, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
		sc.Close()
		if err != nil {
			last = err
			continue
		}
		hp := net.JoinHostPort(addr[0], addr[1])
		for _, n := range c.Nodes {
			if n.Peer != nil && n.Peer.Addr == hp || n.Addr == hp {
				return n, nil
			}
		}
		last = fmt.Errorf("sentinel %s names master %s, which is no node of ours", s.Name, hp)
	}
	return nil, fmt.Errorf("find master: %w", last)
}

// Failover asks the sentinels to promote a replica now (SENTINEL FAILOVER;
// with Config.Failover detect, it leaves them to find the master down).
// Sentinel's own detection can abort with "no good slave" when its last
// INFO from the replicas is older than five seconds (it refreshes them only
// every ten), which would make a fault's effect depend on luck.
func (c *Cluster) Failover(ctx context.Context) error {
	if c.failover == FailoverDetect {
		return nil // the sentinels find the master down and elect on their own
	}
	var last error
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
		err := sc.Failover(ctx, MasterName).Err()
		sc.Close()
		if err == nil || strings.Contains(err.Error(), "INPROG") {
			return nil
		}
		last = err
	}
	return fmt.Errorf("sentinel failover: %w", last)
}
