package lockimpl

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// newClient returns the one shared go-redis client of a Locker: to the
// first node, or, in the sentinel topology, to whichever node Sentinel names
// master.
func newClient(env Env) (*redis.Client, error) {
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if env.DialAddr != nil {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, env.DialAddr(addr))
		}
	}
	// A lock harness must never retry a command on its own: a SET NX that
	// was applied but whose reply was lost would be retried, get nil, and
	// be recorded as a definite failure while we hold the key. Nor dial
	// again and again (go-redis's default, 5 dials 100ms apart): a node
	// that refuses a connection is down, and the lock must hear it at
	// once (Redlock counts it as a "no"). Per-op deadlines are socket
	// deadlines (read and write timeouts), not a context per op.
	rt, pt := time.Duration(0), 30*time.Second // 0: go-redis's default 3s
	if env.OpTimeout > 0 {
		rt, pt = env.OpTimeout, env.OpTimeout
	}
	var c *redis.Client
	switch {
	case env.MasterName != "":
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: env.MasterName, SentinelAddrs: env.Sentinels,
			Password: env.Password, PoolSize: max(env.PoolSize, 10), Protocol: 2, MaxRetries: -1, DialerRetries: 1,
			ReadTimeout: rt, WriteTimeout: rt, ContextTimeoutEnabled: true, PoolTimeout: pt, DisableIdentity: true, Dialer: dial})
	case len(env.Addrs) > 0:
		c = redis.NewClient(&redis.Options{Addr: env.Addrs[0], Password: env.Password,
			PoolSize: max(env.PoolSize, 10), Protocol: 2, MaxRetries: -1, DialerRetries: 1,
			ReadTimeout: rt, WriteTimeout: rt, ContextTimeoutEnabled: true, PoolTimeout: pt, DisableIdentity: true, Dialer: dial})
	default:
		return nil, errors.New("no redis address")
	}
	for _, h := range env.Hooks {
		c.AddHook(h)
	}
	return c, nil
}
