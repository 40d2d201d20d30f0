package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// Redislock adapts github.com/bsm/redislock, a widely used third-party Go
// lock, as it is: its own token, its own scripts, no retry (the workload
// retries). Its Obtain is a Lua SET NX PX; Refresh is compare-and-PEXPIRE;
// Release is compare-and-DEL.
type Redislock struct {
	c   redis.UniversalClient
	rl  *redislock.Client
	now func() int64
}

// NewRedislock is the Factory of "redislock".
func NewRedislock(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	return &Redislock{c: c, rl: redislock.New(c), now: ClockOf(env)}, nil
}

// redislockErr maps the library's errors to the Locker convention.
func redislockErr(what, key string, err error) error {
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		if what == "acquire" {
			return ErrNotAcquired
		}
		return ErrNotHeld
	case errors.Is(err, redislock.ErrLockNotHeld):
		return ErrNotHeld
	}
	return firstErr(what, key, err)
}

// Acquire implements Locker.
func (r *Redislock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	call := time.Duration(r.now())
	lk, err := r.rl.Obtain(ctx, key, ttl, nil)
	if err != nil {
		return Lease{}, redislockErr("acquire", key, err)
	}
	return Lease{Key: key, Token: lk.Token(), Acquired: call, TTL: ttl, Handle: lk}, nil
}

func handle(l Lease) (*redislock.Lock, error) {
	lk, ok := l.Handle.(*redislock.Lock)
	if !ok {
		return nil, fmt.Errorf("redislock: lease of %s has no redislock handle", l.Key)
	}
	return lk, nil
}

// Release implements Locker.
func (r *Redislock) Release(ctx context.Context, l Lease) error {
	lk, err := handle(l)
	if err != nil {
		return err
	}
	if err := lk.Release(ctx); err != nil {
		return redislockErr("release", l.Key, err)
	}
	return nil
}

// Extend implements Locker with Refresh.
func (r *Redislock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	lk, err := handle(l)
	if err != nil {
		return Lease{}, err
	}
	call := time.Duration(r.now())
	if err := lk.Refresh(ctx, ttl, nil); err != nil {
		return Lease{}, redislockErr("extend", l.Key, err)
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close implements Closer.
func (r *Redislock) Close() error { return r.c.Close() }

// redislockEntry registers "redislock".
var redislockEntry = Entry{Name: "redislock", Factory: NewRedislock,
	Description: "github.com/bsm/redislock v0.9 as it is: Obtain (Lua SET NX PX), Refresh (compare-and-PEXPIRE), Release (compare-and-DEL)"}
