package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelNodes asks the sentinels for the master and its replicas.
func (c *Cluster) sentinelNodes(ctx context.Context) ([]string, error) {
	e := c.external
	var last error
	for _, s := range e.Sentinels {
		o := c.Options(s)
		o.Username, o.Password = "", e.SentinelPassword
		sc := redis.NewSentinelClient(o)
		m, err := sc.GetMasterAddrByName(ctx, e.MasterName).Result()
		if err != nil {
			sc.Close()
			last = fmt.Errorf("sentinel %s: master %q: %v", s, e.MasterName, err)
			if errors.Is(err, redis.Nil) {
				last = fmt.Errorf("sentinel %s monitors no master named %q: check --master-name", s, e.MasterName)
			} else if !strings.Contains(err.Error(), "i/o timeout") && !strings.Contains(err.Error(), "refused") {
				return nil, last
			}
			continue
		}
		addrs := []string{net.JoinHostPort(m[0], m[1])}
		reps, err := sc.Replicas(ctx, e.MasterName).Result()
		sc.Close()
		if err != nil {
			return nil, fmt.Errorf("sentinel %s: replicas of %q: %v", s, e.MasterName, err)
		}
		for _, r := range reps {
			if !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") {
				addrs = append(addrs, net.JoinHostPort(r["ip"], r["port"]))
			}
		}
		return addrs, nil
	}
	return nil, fmt.Errorf("no sentinel answers: %w", last)
}

// clusterNodes asks the first seed that answers for the cluster's
// masters and replicas (CLUSTER SHARDS), masters first.
func (c *Cluster) clusterNodes(ctx context.Context, seeds []string) (addrs []string, masters int, err error) {
	var last error
	for _, s := range seeds {
		rc := redis.NewClient(c.Options(s))
		shards, err := rc.ClusterShards(ctx).Result()
		rc.Close()
		if err != nil {
			last = reach(s, err)
			continue
		}
		var ms, replicas []string
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				if n.Health != "online" {
					continue
				}
				host := cmpOr(n.Endpoint, n.IP)
				port := n.Port
				if c.TLS != nil && n.TLSPort != 0 {
					port = n.TLSPort
				}
				a := net.JoinHostPort(host, strconv.FormatInt(port, 10))
				if n.Role == "master" {
					ms = append(ms, a)
				} else {
					replicas = append(replicas, a)
				}
			}
		}
		if len(ms) == 0 {
			return nil, 0, fmt.Errorf("redis %s: CLUSTER SHARDS names no master online", s)
		}
		return append(ms, replicas...), len(ms), nil
	}
	return nil, 0, last
}

// masterKeys returns each master's address with a probe key it serves.
func (c *Cluster) masterKeys(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	switch c.Topology {
	case Sentinel:
		out[c.Nodes[0].Addr] = c.external.ProbeKey(0)
	case RedisCluster:
		cc := c.clusterClient()
		defer cc.Close()
		for i := 0; len(out) < c.primaries && i < 10*16384; i++ {
			key := c.external.ProbeKey(i)
			m, err := cc.MasterForKey(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("cluster: which master serves %s: %w", key, err)
			}
			if _, ok := out[m.Options().Addr]; !ok {
				out[m.Options().Addr] = key
			}
		}
	default:
		for _, n := range c.Nodes {
			out[n.Addr] = c.external.ProbeKey(0)
		}
	}
	return out, nil
}

func (c *Cluster) clusterClient() *redis.ClusterClient {
	o := c.Options("")
	co := &redis.ClusterOptions{Addrs: c.external.ClusterAddrs, Username: o.Username, Password: o.Password, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout}
	if c.TLS != nil {
		co.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: TLSFor(c.TLS, addr)}
			return d.DialContext(ctx, network, addr)
		}
	}
	return redis.NewClusterClient(co)
}

// sentinelMaster returns a client to the current master of the set.
func (c *Cluster) sentinelMaster(ctx context.Context) (*redis.Client, error) {
	addrs, err := c.sentinelNodes(ctx)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(c.Options(addrs[0])), nil
}
