package lockimpl

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The classic mistakes (broken_*.go), each a SetNX with one mistake: each
// exists so that the checkers can be proven to catch it, and differs from
// SetNX in exactly the way its name says.

// mistake is the part of a broken lock that differs from SetNX; a nil
// method result means "do what SetNX does".
type mistake interface {
	acquire(ctx context.Context, c redis.UniversalClient, l Lease) (handled bool, err error)
	release(ctx context.Context, c redis.UniversalClient, l Lease) (handled bool, err error)
	extend(ctx context.Context, c redis.UniversalClient, l Lease, ttl time.Duration) (handled bool, err error)
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

func (correct) acquire(context.Context, redis.UniversalClient, Lease) (bool, error) {
	return false, nil
}
func (correct) release(context.Context, redis.UniversalClient, Lease) (bool, error) {
	return false, nil
}
func (correct) extend(context.Context, redis.UniversalClient, Lease, time.Duration) (bool, error) {
	return false, nil
}

func wrap(what, key string, err error) error { return fmt.Errorf("%s %s: %w", what, key, err) }
