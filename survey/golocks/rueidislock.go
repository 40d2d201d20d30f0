package golocks

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// Versions pinned in survey/go.mod, for run.json and the survey's table.
const (
	RueidisVersion = "v1.0.79"
	ValkeyVersion  = "v1.0.79"
	GoZeroVersion  = "v1.10.3"
)

// RueidislockOptions are how the survey sets up rueidislock, as its
// README does for one Redis: KeyMajority 1, NoLoopTracking (Redis >=
// 7.0.5), KeyValidity the run's TTL (renewed every half of it, the
// default). FallbackSETPX is the documented switch for Redis < 6.2.
type RueidislockOptions struct {
	FallbackSETPX bool
}

// NewRueidislock is the Factory of rueidislock with opts.
func NewRueidislock(opts RueidislockOptions) lockimpl.Factory {
	return func(env lockimpl.Env) (lockimpl.Locker, error) {
		return perTTL("rueidislock", env, rueidislock.ErrNotLocked, func(ttl time.Duration) (tryFunc, func(), error) {
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: rueidisOption(env),
				KeyMajority: 1, NoLoopTracking: true, KeyValidity: ttl, FallbackSETPX: opts.FallbackSETPX})
			if err != nil {
				return nil, nil, err
			}
			return l.TryWithContext, l.Close, nil
		})
	}
}

// NewValkeylock is the Factory of valkeylock, rueidislock's fork, set up
// the same way.
func NewValkeylock(opts RueidislockOptions) lockimpl.Factory {
	return func(env lockimpl.Env) (lockimpl.Locker, error) {
		return perTTL("valkeylock", env, valkeylock.ErrNotLocked, func(ttl time.Duration) (tryFunc, func(), error) {
			o := rueidisOption(env)
			vo := valkey.ClientOption{InitAddress: o.InitAddress, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
				ConnWriteTimeout: o.ConnWriteTimeout, DialCtxFn: o.DialCtxFn,
				Sentinel: valkey.SentinelOption{MasterSet: o.Sentinel.MasterSet, Password: o.Sentinel.Password, Username: o.Sentinel.Username}}
			l, err := valkeylock.NewLocker(valkeylock.LockerOption{ClientOption: vo,
				KeyMajority: 1, NoLoopTracking: true, KeyValidity: ttl, FallbackSETPX: opts.FallbackSETPX})
			if err != nil {
				return nil, nil, err
			}
			return l.TryWithContext, l.Close, nil
		})
	}
}

// perTTL makes a scoped lock of a library whose validity is set per
// locker, not per acquire: one locker per TTL the run asks for (a run
// asks for one), made at its first acquire.
func perTTL(name string, env lockimpl.Env, notLocked error, make func(ttl time.Duration) (tryFunc, func(), error)) (lockimpl.Locker, error) {
	var mu sync.Mutex
	tries := map[time.Duration]tryFunc{}
	var closers []func()
	s := &scoped{name: name, notLocked: notLocked, now: lockimpl.ClockOf(env), holds: map[string]*hold{}}
	s.try = func(ttl time.Duration) (tryFunc, error) {
		mu.Lock()
		defer mu.Unlock()
		if t, ok := tries[ttl]; ok {
			return t, nil
		}
		t, closer, err := make(ttl)
		if err != nil {
			return nil, err
		}
		tries[ttl], closers = t, append(closers, closer)
		return t, nil
	}
	s.close = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			c()
		}
		closers = nil
	}
	return s, nil
}

// rueidisOption reaches the run's Redis: its node or its Sentinels, with
// its password and TLS, each command bounded by the run's op timeout.
func rueidisOption(env lockimpl.Env) rueidis.ClientOption {
	o := rueidis.ClientOption{InitAddress: env.Addrs, Username: env.Username, Password: env.Password, TLSConfig: env.TLS,
		ConnWriteTimeout: env.OpTimeout}
	if env.MasterName != "" {
		o.InitAddress = env.Sentinels
		o.Sentinel = rueidis.SentinelOption{MasterSet: env.MasterName, Password: env.SentinelPassword}
	}
	if env.DialAddr != nil {
		o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, t *tls.Config) (net.Conn, error) {
			if t != nil {
				return (&tls.Dialer{NetDialer: d, Config: t}).DialContext(ctx, "tcp", env.DialAddr(addr))
			}
			return d.DialContext(ctx, "tcp", env.DialAddr(addr))
		}
	}
	return o
}
