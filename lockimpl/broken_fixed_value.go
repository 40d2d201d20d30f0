package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// brokenFixedValueEntry is "broken-fixed-value".
var brokenFixedValueEntry = Entry{Name: "broken-fixed-value", Broken: true, Factory: brokenFactory(fixedValue{}),
	Description: `every client stores the same value ("locked"), so compare-and-delete releases anyone's lock`}

// fixedValue stores the same value for every client.
type fixedValue struct{}

const fixedLockValue = "locked"

func (fixedValue) acquire(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
	err := c.SetArgs(ctx, l.Key, fixedLockValue, redis.SetArgs{Mode: "NX", TTL: l.TTL}).Err()
	if errors.Is(err, redis.Nil) {
		return true, ErrNotAcquired
	}
	if err != nil {
		return true, firstErr("acquire", l.Key, err)
	}
	return true, nil
}

func (fixedValue) release(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
	return true, runScript(ctx, c, releaseScript, "release", l.Key, fixedLockValue)
}

func (fixedValue) extend(ctx context.Context, c redis.UniversalClient, l Lease, ttl time.Duration) (bool, error) {
	return true, runScript(ctx, c, extendScript, "extend", l.Key, fixedLockValue, ttl.Milliseconds())
}
