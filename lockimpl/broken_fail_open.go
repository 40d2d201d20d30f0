package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// brokenFailOpenEntry is "broken-fail-open".
var brokenFailOpenEntry = Entry{Name: "broken-fail-open", Broken: true, Factory: brokenFactory(failOpen{}),
	Description: "an error from Redis reads as acquired (fail open, so that an outage does not stop the work): while Redis is down every client holds the lock"}

// failOpen is SetNX whose acquire takes any error but "taken" for a yes.
type failOpen struct{ correct }

func (failOpen) acquire(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
	err := c.SetArgs(ctx, l.Key, l.Token, redis.SetArgs{Mode: "NX", TTL: l.TTL}).Err()
	if errors.Is(err, redis.Nil) {
		return true, ErrNotAcquired
	}
	// The mistake: a refused connection, a timeout, a LOADING reply are
	// all taken for "acquired".
	return true, nil
}
