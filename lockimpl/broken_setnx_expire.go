package lockimpl

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// brokenSetNXExpireEntry is "broken-setnx-expire".
var brokenSetNXExpireEntry = Entry{Name: "broken-setnx-expire", Broken: true, Factory: brokenFactory(setnxThenExpire{}),
	Description: "SETNX, then PEXPIRE in a second round trip: a crash between them leaves a lock that never expires"}

type setnxThenExpire struct{ correct }

func (setnxThenExpire) acquire(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
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
