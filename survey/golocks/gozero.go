package golocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// goZeroTolerance is what go-zero adds to the TTL it is given
// (core/stores/redis/redislock.go, tolerance = 500 ms).
const goZeroTolerance = 500 * time.Millisecond

// GoZero adapts go-zero's core/stores/redis.RedisLock as its docs use
// it: NewRedisLock(store, key), SetExpire(seconds), AcquireCtx,
// ReleaseCtx. Its TTL is whole seconds (a run's TTL is rounded up, as a
// caller must) and its key lives 500 ms more (KeyTTL). It has no extend:
// a holder renews by calling AcquireCtx again on the same RedisLock,
// which its lockscript.lua turns into SET PX when the key is still its
// own, and into SET NX PX otherwise.
type GoZero struct {
	store *zredis.Redis
	now   func() int64
}

// NewGoZero is the Factory of go-zero: one node (go-zero has no
// Sentinel client).
func NewGoZero(env lockimpl.Env) (lockimpl.Locker, error) {
	logx.Disable() // go-zero logs every failed acquire on stdout
	store, err := zredis.NewRedis(zredis.RedisConf{Host: env.Addrs[0], Type: zredis.NodeType, User: env.Username, Pass: env.Password,
		Tls: env.TLS != nil, NonBlock: true})
	if err != nil {
		return nil, err
	}
	return &GoZero{store: store, now: lockimpl.ClockOf(env)}, nil
}

// seconds is ttl in whole seconds, rounded up: what SetExpire takes.
func seconds(ttl time.Duration) int {
	return int((ttl + time.Second - 1) / time.Second)
}

// TTLRule implements lockimpl.TTLRuler: whole seconds, and 500 ms.
func (g *GoZero) TTLRule() lockimpl.TTLRule {
	return lockimpl.TTLRule{Round: time.Second, Add: goZeroTolerance}
}

// KeyTTL implements lockimpl.KeyTTLer: the seconds go-zero is given and
// its 500 ms.
func (g *GoZero) KeyTTL(ttl time.Duration) time.Duration { return g.TTLRule().KeyTTL(ttl) }

// zeroErr maps go-zero's outcome to the Locker convention: its breaker
// open means the command was not sent.
func zeroErr(what, key string, ok bool, err error, refused error) error {
	switch {
	case errors.Is(err, breaker.ErrServiceUnavailable):
		return lockimpl.ErrNotSent
	case err != nil:
		return fmt.Errorf("go-zero: %s %s: %w", what, key, err)
	case !ok:
		return refused
	}
	return nil
}

// Acquire implements lockimpl.Locker.
func (g *GoZero) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	rl := zredis.NewRedisLock(g.store, key)
	rl.SetExpire(seconds(ttl))
	call := time.Duration(g.now())
	ok, err := rl.AcquireCtx(ctx)
	if err := zeroErr("acquire", key, ok, err, lockimpl.ErrNotAcquired); err != nil {
		return lockimpl.Lease{}, err
	}
	return lockimpl.Lease{Key: key, Token: lockimpl.NewToken(), Acquired: call, TTL: time.Duration(seconds(ttl)) * time.Second, Handle: rl}, nil
}

func zeroLock(l lockimpl.Lease) (*zredis.RedisLock, error) {
	rl, ok := l.Handle.(*zredis.RedisLock)
	if !ok {
		return nil, fmt.Errorf("%w: go-zero: lease of %s has no RedisLock", lockimpl.ErrBadLock, l.Key)
	}
	return rl, nil
}

// Release implements lockimpl.Locker.
func (g *GoZero) Release(ctx context.Context, l lockimpl.Lease) error {
	rl, err := zeroLock(l)
	if err != nil {
		return err
	}
	ok, err := rl.ReleaseCtx(ctx)
	return zeroErr("release", l.Key, ok, err, lockimpl.ErrNotHeld)
}

// Extend implements lockimpl.Locker as go-zero renews: AcquireCtx again
// on the lease's RedisLock.
func (g *GoZero) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	rl, err := zeroLock(l)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	rl.SetExpire(seconds(ttl))
	call := time.Duration(g.now())
	ok, err := rl.AcquireCtx(ctx)
	if err := zeroErr("extend", l.Key, ok, err, lockimpl.ErrNotHeld); err != nil {
		return lockimpl.Lease{}, err
	}
	l.Acquired, l.TTL = call, time.Duration(seconds(ttl))*time.Second
	return l, nil
}
