package lockimpl

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialEvery is the pool size of a Redlock master's client: the failed
// dials go-redis allows before it stops dialing the node (newClient).
const dialEvery = 1 << 12

// newClient returns the one shared go-redis client of a Locker: to the
// first node, in the sentinel topology to whichever node Sentinel names
// master, and in the cluster topology to the node that serves the key.
func newClient(env Env) (redis.UniversalClient, error) {
	opts := clientOptions(env)
	var c redis.UniversalClient
	switch {
	case env.Cluster:
		cc := redis.NewClusterClient(opts.Cluster())
		// The cluster client follows MOVED and ASK, and resends a command
		// whose connection broke or timed out (to the same node, then
		// another): never ours, which may have been applied.
		// The faults' hooks go on each node's client too, outside
		// noResend, so that they meet every command the lock sends, a
		// pipeline on the key's node included (MasterForKey).
		cc.OnNewNode(func(n *redis.Client) {
			n.AddHook(badReply{})
			for _, h := range env.Hooks {
				n.AddHook(h)
			}
			if !env.resend {
				n.AddHook(noResend{})
			}
		})
		return cc, nil
	case env.MasterName != "":
		// Sentinels are the addresses a failover client starts from.
		opts.MasterName, opts.Addrs, opts.SentinelPassword = env.MasterName, env.Sentinels, env.SentinelPassword
		c = redis.NewFailoverClient(opts.Failover())
	case len(env.Addrs) > 0:
		c = redis.NewClient(opts.Simple())
	default:
		return nil, errors.New("no redis address")
	}
	c.AddHook(badReply{})
	for _, h := range env.Hooks {
		c.AddHook(h)
	}
	if env.OnClient != nil {
		env.OnClient(c)
	}
	return c, nil
}

// clientOptions is the one set of options every client of the lock is
// made of; the topology picks the client (newClient).
func clientOptions(env Env) *redis.UniversalOptions {
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
	retries := -1
	if env.resend {
		retries = 3
	}
	// A Redlock's master that was down must be dialed again as soon as it
	// is back: go-redis stops dialing a node after PoolSize failed dials
	// and answers every command with the last dial error until a probe,
	// once a second, gets through (internal/pool/pool.go:700, 773,
	// 814-840 at v9.23.0), so a minority restarted empty looked down to
	// every client for up to a second more, longer than what a 1 s lease
	// the clock-quorum jump put at risk had left: redlock broke at
	// clock-quorum in 2 of 9 seeds with it; with 4,096 failed dials
	// allowed, redlock and redsync broke there at each of seeds 1 to 4.
	// The pool's size otherwise only bounds the connections, which the
	// clients bound anyway, but go-redis allocates by it: 2.2 MiB and
	// 5 ms a master at 4,096 (65,536 cost 36 MiB and 23 ms).
	poolSize := max(env.PoolSize, 10)
	if env.master {
		poolSize = max(poolSize, dialEvery)
	}
	if env.Pool > 0 {
		poolSize = env.Pool
	}
	return &redis.UniversalOptions{Addrs: env.Addrs, Username: env.Username, Password: env.Password,
		PoolSize: poolSize, Protocol: 2, MaxRetries: retries, DialerRetries: 1,
		ReadTimeout: rt, WriteTimeout: rt, ContextTimeoutEnabled: true, PoolTimeout: pt, DisableIdentity: true, Dialer: dialer(env)}
}

// dialer returns the clients' dialer: to the address DialAddr maps an
// announced one to, over TLS if env says so (nil: go-redis's own).
func dialer(env Env) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if env.DialAddr == nil && env.TLS == nil && !env.Steady {
		return nil
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := addr
		if env.DialAddr != nil {
			to = env.DialAddr(addr)
		}
		if env.TLS == nil {
			c, err := d.DialContext(ctx, network, to)
			if err != nil || !env.Steady {
				return c, err
			}
			return steadyConn{c}, nil
		}
		cfg := env.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, network, to)
	}
}

// steadyConn is a connection go-redis does not health-check when it takes
// it from the pool: its check peeks only at a conn that exposes its
// socket (syscall.Conn), and steadyConn hides it (Env.Steady).
type steadyConn struct{ net.Conn }

// noResend is the hook on each node of a cluster client: an error after
// which the command may have reached Redis (a broken connection, a
// timeout) becomes a ReplyLost, which the cluster client does not resend.
// Errors before sending (a refused dial) and Redis's own replies (MOVED,
// ASK, TRYAGAIN) pass unchanged.
type noResend struct{}

// ReplyLost is a command whose reply never came: it may have been applied.
type ReplyLost struct{ Err error }

func (e ReplyLost) Error() string { return "reply lost: " + e.Err.Error() }

func (noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if lost := replyLost(err); lost != nil {
			cmd.SetErr(lost)
			return lost
		}
		return err
	}
}

func (noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if lost := replyLost(err); lost != nil {
			for _, cmd := range cmds {
				if cmd.Err() != nil {
					cmd.SetErr(lost)
				}
			}
			return lost
		}
		return err
	}
}

// replyLost wraps err if the command may have reached Redis.
func replyLost(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return nil
	}
	var rerr redis.Error
	var op *net.OpError
	if errors.As(err, &rerr) || (errors.As(err, &op) && op.Op == "dial") || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return ReplyLost{Err: err}
}

// pipelineFor returns a pipeline on the node that serves key: on a
// cluster client, that node's own client, so that keyless commands in it
// (WAIT) run where the key's write did.
func pipelineFor(ctx context.Context, c redis.UniversalClient, key string) (redis.Pipeliner, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c.Pipeline(), nil
	}
	n, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	return n.Pipeline(), nil
}
