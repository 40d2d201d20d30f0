package lockimpl

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The classic mistakes of a semaphore (broken_semaphore*.go), each a
// Semaphore with one mistake, as broken.go's are SetNX's.

// semMistake is the part of a broken semaphore that differs from
// Semaphore; handled false means "do what Semaphore does".
type semMistake interface {
	acquire(ctx context.Context, s *Semaphore, l Lease) (handled bool, err error)
	release(ctx context.Context, s *Semaphore, l Lease) (handled bool, err error)
	extend(ctx context.Context, s *Semaphore, l Lease, ttl time.Duration) (handled bool, err error)
}

// brokenSem is a Semaphore with one mistake.
type brokenSem struct {
	*Semaphore
	m semMistake
}

func brokenSemFactory(m semMistake) Factory {
	return func(env Env) (Locker, error) {
		s, err := NewSemaphore(env)
		if err != nil {
			return nil, err
		}
		return &brokenSem{Semaphore: s.(*Semaphore), m: m}, nil
	}
}

func (b *brokenSem) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := b.newLease(key, ttl)
	handled, err := b.m.acquire(ctx, b.Semaphore, l)
	if !handled {
		return b.Semaphore.Acquire(ctx, key, ttl)
	}
	if err != nil {
		return Lease{}, err
	}
	return l, nil
}

func (b *brokenSem) Release(ctx context.Context, l Lease) error {
	if handled, err := b.m.release(ctx, b.Semaphore, l); handled {
		return err
	}
	return b.Semaphore.Release(ctx, l)
}

func (b *brokenSem) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(b.now())
	handled, err := b.m.extend(ctx, b.Semaphore, l, ttl)
	if !handled {
		return b.Semaphore.Extend(ctx, l, ttl)
	}
	if err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// semCorrect supplies Semaphore's behaviour for what a mistake leaves alone.
type semCorrect struct{}

func (semCorrect) acquire(context.Context, *Semaphore, Lease) (bool, error) { return false, nil }
func (semCorrect) release(context.Context, *Semaphore, Lease) (bool, error) { return false, nil }
func (semCorrect) extend(context.Context, *Semaphore, Lease, time.Duration) (bool, error) {
	return false, nil
}

// brokenSemaphoreCheckAddEntry is "broken-semaphore-check-add".
var brokenSemaphoreCheckAddEntry = Entry{Name: "broken-semaphore-check-add", Broken: true, Factory: brokenSemFactory(checkThenAdd{}), Shape: ShapeSemaphore,
	Description: "semaphore that prunes and counts in one script, then ZADDs in a second command: clients that all counted k-1 all add (over-admission)"}

// semaphoreCountSource prunes the expired permits and counts the rest,
// returning Redis's clock in ms with the count.
const semaphoreCountSource = semaphoreNow + `redis.call("zremrangebyscore", KEYS[1], "-inf", now)
return {redis.call("zcard", KEYS[1]), now}`

var semaphoreCount = redis.NewScript(semaphoreCountSource)

type checkThenAdd struct{ semCorrect }

func (checkThenAdd) acquire(ctx context.Context, s *Semaphore, l Lease) (bool, error) {
	r, err := semaphoreCount.Run(ctx, s.c, []string{l.Key}).Int64Slice()
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	if r[0] >= int64(s.k) {
		return true, ErrNotAcquired
	}
	// The gap: every client that counted a free permit adds its own.
	if err := s.c.ZAdd(ctx, l.Key, redis.Z{Score: float64(r[1] + l.TTL.Milliseconds()), Member: l.Token}).Err(); err != nil {
		return true, wrap("acquire", l.Key, err)
	}
	return true, nil
}

// brokenSemaphoreCounterEntry is "broken-semaphore-counter".
var brokenSemaphoreCounterEntry = Entry{Name: "broken-semaphore-counter", Broken: true, Factory: brokenSemFactory(counter{}), Shape: ShapeSemaphore,
	Description: "semaphore as an INCR/DECR counter with no expiry: a crashed holder's permit is never given back, and the key refuses with fewer than k held"}

// counter counts the permits held in a string key: INCR to take one
// (DECR back if that went past k), DECR to give it back. Nothing expires.
type counter struct{}

func (counter) acquire(ctx context.Context, s *Semaphore, l Lease) (bool, error) {
	n, err := s.c.Incr(ctx, l.Key).Result()
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	if n > int64(s.k) {
		if err := s.c.Decr(ctx, l.Key).Err(); err != nil {
			return true, fmt.Errorf("acquire %s: give back: %w", l.Key, err)
		}
		return true, ErrNotAcquired
	}
	return true, nil
}

func (counter) release(ctx context.Context, s *Semaphore, l Lease) (bool, error) {
	if err := s.c.Decr(ctx, l.Key).Err(); err != nil {
		return true, firstErr("release", l.Key, err)
	}
	return true, nil
}

// extend has nothing to extend: a counter's permits never expire.
func (counter) extend(context.Context, *Semaphore, Lease, time.Duration) (bool, error) {
	return true, nil
}
