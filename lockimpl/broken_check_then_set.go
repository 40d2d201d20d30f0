package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// brokenCheckThenSetEntry is "broken-check-then-set".
var brokenCheckThenSetEntry = Entry{Name: "broken-check-then-set", Broken: true, Factory: brokenFactory(checkThenSet{}),
	Description: "GET, then SET without NX if the key was empty: two clients both see it free"}

type checkThenSet struct{ correct }

func (checkThenSet) acquire(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
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
