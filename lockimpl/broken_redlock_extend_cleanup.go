package lockimpl

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// brokenRedlockExtendCleanupEntry is "broken-redlock-extend-cleanup":
// redsync between PR #149 and PR #151
// (https://github.com/go-redsync/redsync/pull/151). Its extend, on a
// node that answered with an error (down, timed out), "cleaned up" by
// releasing the lease on every node, yet still reported the extend done
// when a majority had extended: one master down is enough to delete a
// lease its holder goes on believing in.
var brokenRedlockExtendCleanupEntry = Entry{Name: "broken-redlock-extend-cleanup", Broken: true, Factory: newRedlockExtendCleanup, Topology: "redlock",
	Description: "Redlock whose extend, when a node errs, releases the lease on every node and still reports a majority's extend as done (redsync PR #149, fixed by #151): one master down deletes held leases"}

func newRedlockExtendCleanup(env Env) (Locker, error) {
	l, err := NewRedlock(env)
	if err != nil {
		return nil, err
	}
	l.(*Redlock).cleanupOnExtendError = true
	return l, nil
}

// cleanupOnError is touch, which on an error releases l on every node
// before it answers, as redsync's touch did.
func (r *Redlock) cleanupOnError(touch func(context.Context, redis.UniversalClient) (bool, error), l Lease) func(context.Context, redis.UniversalClient) (bool, error) {
	return func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		ok, err := touch(ctx, c)
		if err != nil {
			r.onAll(context.WithoutCancel(ctx), l.TTL, nodeScript(releaseScript, l.Key, l.Token))
		}
		return ok, err
	}
}
