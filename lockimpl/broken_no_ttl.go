package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// brokenNoTTLEntry is "broken-no-ttl".
var brokenNoTTLEntry = Entry{Name: "broken-no-ttl", Broken: true, Factory: brokenFactory(noTTL{}),
	Description: "SET NX without PX: a holder that dies never lets go"}

type noTTL struct{}

func (noTTL) acquire(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
	err := c.SetArgs(ctx, l.Key, l.Token, redis.SetArgs{Mode: "NX"}).Err()
	if errors.Is(err, redis.Nil) {
		return true, ErrNotAcquired
	}
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	return true, nil
}

func (noTTL) release(context.Context, redis.UniversalClient, Lease) (bool, error) { return false, nil }

// extend only checks ownership: a lock without a TTL has nothing to extend.
func (noTTL) extend(ctx context.Context, c redis.UniversalClient, l Lease, _ time.Duration) (bool, error) {
	v, err := c.Get(ctx, l.Key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != l.Token) {
		return true, ErrNotHeld
	}
	if err != nil {
		return true, firstErr("extend", l.Key, err)
	}
	return true, nil
}
