package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The classic mistakes. Each exists so that the checkers can be proven to
// catch it; each differs from SetNX in exactly the way its name says.
var brokenLocks = []Entry{
	{Name: "broken-setnx-expire", Broken: true, Factory: brokenFactory(setnxThenExpire{}),
		Description: "SETNX, then PEXPIRE in a second round trip: a crash between them leaves a lock that never expires"},
	{Name: "broken-fixed-value", Broken: true, Factory: brokenFactory(fixedValue{}),
		Description: `every client stores the same value ("locked"), so compare-and-delete releases anyone's lock`},
	{Name: "broken-del-release", Broken: true, Factory: brokenFactory(delRelease{}),
		Description: "release is an unconditional DEL: a late release deletes the next holder's lock"},
	{Name: "broken-get-del-release", Broken: true, Factory: brokenFactory(getDelRelease{}),
		Description: "release is GET, compare in Go, then DEL: the key can change hands between the two"},
	{Name: "broken-no-ttl", Broken: true, Factory: brokenFactory(noTTL{}),
		Description: "SET NX without PX: a holder that dies never lets go"},
	{Name: "broken-check-then-set", Broken: true, Factory: brokenFactory(checkThenSet{}),
		Description: "GET, then SET without NX if the key was empty: two clients both see it free"},
}

// mistake is the part of a broken lock that differs from SetNX; a nil
// method result means "do what SetNX does".
type mistake interface {
	acquire(ctx context.Context, c *redis.Client, l Lease) (handled bool, err error)
	release(ctx context.Context, c *redis.Client, l Lease) (handled bool, err error)
	extend(ctx context.Context, c *redis.Client, l Lease, ttl time.Duration) (handled bool, err error)
}

// broken is a SetNX with one mistake.
type broken struct {
	*SetNX
	m mistake
}

func brokenFactory(m mistake) Factory {
	return func(env Env) (Locker, error) {
		s, err := NewSetNX(env)
		if err != nil {
			return nil, err
		}
		return &broken{SetNX: s.(*SetNX), m: m}, nil
	}
}

func (b *broken) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := b.newLease(key, ttl)
	handled, err := b.m.acquire(ctx, b.c, l)
	if !handled {
		return b.SetNX.acquire(ctx, l)
	}
	if err != nil {
		return Lease{}, err
	}
	return l, nil
}

func (b *broken) Release(ctx context.Context, l Lease) error {
	if handled, err := b.m.release(ctx, b.c, l); handled {
		return err
	}
	return b.SetNX.Release(ctx, l)
}

func (b *broken) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(b.now())
	handled, err := b.m.extend(ctx, b.c, l, ttl)
	if !handled {
		return b.SetNX.Extend(ctx, l, ttl)
	}
	if err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// correct supplies SetNX's behaviour for the operations a mistake leaves alone.
type correct struct{}

func (correct) acquire(context.Context, *redis.Client, Lease) (bool, error) { return false, nil }
func (correct) release(context.Context, *redis.Client, Lease) (bool, error) { return false, nil }
func (correct) extend(context.Context, *redis.Client, Lease, time.Duration) (bool, error) {
	return false, nil
}

func wrap(what, key string, err error) error { return fmt.Errorf("%s %s: %w", what, key, err) }

type setnxThenExpire struct{ correct }

func (setnxThenExpire) acquire(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	ok, err := c.SetNX(ctx, l.Key, l.Token, 0).Result()
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	if !ok {
		return true, ErrNotAcquired
	}
	// The second round trip: a client that dies here leaves the key forever.
	if err := c.PExpire(ctx, l.Key, l.TTL).Err(); err != nil {
		return true, wrap("acquire", l.Key, err)
	}
	return true, nil
}

// fixedValue stores the same value for every client.
type fixedValue struct{}

const fixedLockValue = "locked"

func (fixedValue) acquire(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	err := c.SetArgs(ctx, l.Key, fixedLockValue, redis.SetArgs{Mode: "NX", TTL: l.TTL}).Err()
	if errors.Is(err, redis.Nil) {
		return true, ErrNotAcquired
	}
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	return true, nil
}

func (fixedValue) release(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	return true, runScript(ctx, c, releaseScript, "release", l.Key, fixedLockValue)
}

func (fixedValue) extend(ctx context.Context, c *redis.Client, l Lease, ttl time.Duration) (bool, error) {
	return true, runScript(ctx, c, extendScript, "extend", l.Key, fixedLockValue, ttl.Milliseconds())
}

type delRelease struct{ correct }

func (delRelease) release(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	return true, del(ctx, c, l.Key)
}

// del deletes key with no ownership check; a missing key is ErrNotHeld.
func del(ctx context.Context, c *redis.Client, key string) error {
	n, err := c.Del(ctx, key).Result()
	if err != nil {
		return firstErr("release", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

type getDelRelease struct{ correct }

func (getDelRelease) release(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	v, err := c.Get(ctx, l.Key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != l.Token) {
		return true, ErrNotHeld
	}
	if err != nil {
		return true, firstErr("release", l.Key, err)
	}
	// The gap: the key may expire and be taken by another client here.
	return true, del(ctx, c, l.Key)
}

type noTTL struct{}

func (noTTL) acquire(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	err := c.SetArgs(ctx, l.Key, l.Token, redis.SetArgs{Mode: "NX"}).Err()
	if errors.Is(err, redis.Nil) {
		return true, ErrNotAcquired
	}
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	return true, nil
}

func (noTTL) release(context.Context, *redis.Client, Lease) (bool, error) { return false, nil }

// extend only checks ownership: a lock without a TTL has nothing to extend.
func (noTTL) extend(ctx context.Context, c *redis.Client, l Lease, _ time.Duration) (bool, error) {
	v, err := c.Get(ctx, l.Key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != l.Token) {
		return true, ErrNotHeld
	}
	if err != nil {
		return true, firstErr("extend", l.Key, err)
	}
	return true, nil
}

type checkThenSet struct{ correct }

func (checkThenSet) acquire(ctx context.Context, c *redis.Client, l Lease) (bool, error) {
	err := c.Get(ctx, l.Key).Err()
	if err == nil {
		return true, ErrNotAcquired
	}
	if !errors.Is(err, redis.Nil) {
		return true, firstErr("acquire", l.Key, err)
	}
	// The gap: another client can see the key empty too, and both SET.
	if err := c.Set(ctx, l.Key, l.Token, l.TTL).Err(); err != nil {
		return true, wrap("acquire", l.Key, err)
	}
	return true, nil
}
