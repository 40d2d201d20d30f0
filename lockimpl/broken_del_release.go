package lockimpl

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// brokenDelReleaseEntry is "broken-del-release".
var brokenDelReleaseEntry = Entry{Name: "broken-del-release", Broken: true, Factory: brokenFactory(delRelease{}),
	Description: "release is an unconditional DEL: a late release deletes the next holder's lock"}

type delRelease struct{ correct }

func (delRelease) release(ctx context.Context, c redis.UniversalClient, l Lease) (bool, error) {
	return true, del(ctx, c, l.Key)
}

// del deletes key with no ownership check; a missing key is ErrNotHeld.
func del(ctx context.Context, c redis.UniversalClient, key string) error {
	n, err := c.Del(ctx, key).Result()
	if err != nil {
		return firstErr("release", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
