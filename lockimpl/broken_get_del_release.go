package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// brokenGetDelReleaseEntry is "broken-get-del-release".
var brokenGetDelReleaseEntry = Entry{Name: "broken-get-del-release", Broken: true, Factory: brokenFactory(getDelRelease{}),
	Description: "release is GET, compare in Go, then DEL: the key can change hands between the two"}

type getDelRelease struct{ correct }

func (getDelRelease) release(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
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
