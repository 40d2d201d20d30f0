package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The keys of a run on an external Redis: all under its prefix, which
// must be the run's alone (claimPrefix), and deleted at the end (clean),
// but for those that were there before when the user let the run reuse
// the prefix.

// claimPrefix refuses a prefix that already holds keys, which the end of
// the run would delete: another application's, or another run's at once.
// With ReusePrefix it records them instead, and clean leaves them.
func (c *Cluster) claimPrefix(ctx context.Context) error {
	var mu sync.Mutex
	existing := map[string]bool{}
	err := c.eachMaster(ctx, func(ctx context.Context, rc *redis.Client) error {
		iter := rc.Scan(ctx, 0, globEscape(c.external.KeyPrefix)+"*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			existing[iter.Val()] = true
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		return fmt.Errorf("scan for keys under %q: %w", c.external.KeyPrefix, err)
	}
	if len(existing) > 0 && !c.external.ReusePrefix {
		keys := make([]string, 0, len(existing))
		for k := range existing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("--key-prefix %q already holds %d key(s) (%s), which the run would delete at its end: choose a prefix nothing uses, or pass --key-prefix-reuse to keep them (then only the keys the run creates are deleted)",
			c.external.KeyPrefix, len(keys), strings.Join(keys[:min(3, len(keys))], ", "))
	}
	c.preexisting = existing
	return nil
}

// clean deletes every key under the prefix on every master but those
// there before the run (Cleaned says how many), and says what it could
// not delete.
func (c *Cluster) clean() error {
	deleted, left, err := c.cleanExternal()
	c.Cleaned = Cleaned{Prefix: c.external.KeyPrefix, Deleted: deleted, Left: left}
	if err != nil || left > 0 {
		return fmt.Errorf("keys under %q on the external redis: %d deleted, %d or more left (%v): delete them with SCAN MATCH and DEL", c.external.KeyPrefix, deleted, left, err)
	}
	return nil
}

// cleanExternal deletes the run's keys under the prefix on every master,
// and says how many it deleted and how many it could not.
func (c *Cluster) cleanExternal() (deleted, left int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	match := globEscape(c.external.KeyPrefix) + "*"
	var mu sync.Mutex // eachMaster runs clean on every master at once
	err = c.eachMaster(ctx, func(ctx context.Context, rc *redis.Client) error {
		iter := rc.Scan(ctx, 0, match, 1000).Iterator()
		for iter.Next(ctx) {
			if c.preexisting[iter.Val()] {
				continue
			}
			err := rc.Del(ctx, iter.Val()).Err()
			mu.Lock()
			if err != nil {
				left++
			} else {
				deleted++
			}
			mu.Unlock()
		}
		return iter.Err()
	})
	return deleted, left, err
}

// eachMaster calls fn with a client of every master (a cluster's at
// once), and joins their errors.
func (c *Cluster) eachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	var errs []error
	switch c.Topology {
	case RedisCluster:
		cc := c.clusterClient()
		errs = append(errs, cc.ForEachMaster(ctx, fn))
		cc.Close()
	case Sentinel:
		rc, err := c.sentinelMaster(ctx)
		if err == nil {
			errs = append(errs, fn(ctx, rc))
			rc.Close()
		}
		errs = append(errs, err)
	default:
		for _, n := range c.Nodes {
			rc := redis.NewClient(c.Options(n.Addr))
			errs = append(errs, fn(ctx, rc))
			rc.Close()
		}
	}
	return errors.Join(errs...)
}

// globEscape escapes the glob characters of a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
