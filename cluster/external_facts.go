package cluster

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Facts are what an external server says about itself that matters to a
// lock, read with INFO and, where the user may, CONFIG GET: node, addr,
// version, mode, role, appendonly, appendfsync, min-replicas-to-write,
// replicas, replication-lag-bytes (the report's servers section), those
// it did not say left out.
type Facts map[string]string

// roundTrip returns the largest of 20 PING round trips to addr.
func (c *Cluster) roundTrip(ctx context.Context, addr string) time.Duration {
	rc := redis.NewClient(c.Options(addr))
	defer rc.Close()
	var worst time.Duration
	for range 20 {
		t := time.Now()
		if rc.Ping(ctx).Err() != nil {
			break
		}
		worst = max(worst, time.Since(t))
	}
	return worst
}

// facts reads what node n says about itself; what the user may not read
// is left out.
func (c *Cluster) facts(ctx context.Context, n *Node) Facts {
	f := Facts{"node": n.Name, "addr": n.Addr}
	rc := redis.NewClient(c.Options(n.Addr))
	defer rc.Close()
	info := map[string]string{}
	if s, err := rc.Info(ctx, "server", "persistence", "replication").Result(); err == nil {
		for _, line := range strings.Split(s, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				info[k] = v
			}
		}
	}
	for name, key := range map[string]string{"version": "redis_version", "mode": "redis_mode", "role": "role", "replicas": "connected_slaves"} {
		if v := info[key]; v != "" {
			f[name] = v
		}
	}
	if v, ok := map[string]string{"1": "yes", "0": "no"}[info["aof_enabled"]]; ok {
		f["appendonly"] = v
	}
	replicas, _ := strconv.Atoi(info["connected_slaves"])
	offset, _ := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	lag := int64(-1)
	for i := range replicas {
		for _, kv := range strings.Split(info["slave"+strconv.Itoa(i)], ",") {
			if v, ok := strings.CutPrefix(kv, "offset="); ok {
				o, _ := strconv.ParseInt(v, 10, 64)
				lag = max(lag, offset-o)
			}
		}
	}
	if lag >= 0 {
		f["replication-lag-bytes"] = strconv.FormatInt(lag, 10)
	}
	for _, name := range []string{"appendfsync", "min-replicas-to-write"} {
		if m, err := rc.ConfigGet(ctx, name).Result(); err == nil && m[name] != "" {
			f[name] = m[name]
		}
	}
	return f
}
