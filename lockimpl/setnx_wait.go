package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

// SetNXWait is SetNX plus WAIT for one replica after acquiring: the lock
// key is on a replica before the client proceeds, which narrows but does not
// close the window in which a failover loses it (WAIT does not make
// replication synchronous; a promoted replica may still lack a later
// write, and the TTL keeps running).
type SetNXWait struct {
	*SetNX
	record func(history.Op)
}

// NewSetNXWait is the Factory of "setnx-wait".
func NewSetNXWait(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	rec := env.Record
	if rec == nil {
		rec = func(history.Op) {}
	}
	return &SetNXWait{SetNX: s.(*SetNX), record: rec}, nil
}

// errNotReplicated: the key was set but no replica confirmed it in time.
var errNotReplicated = errors.New("lock not replicated in time")

// Acquire implements Locker. SET and WAIT go in one pipeline: WAIT covers
// the writes of its own connection only, so on another pooled connection it
// would return at once and wait for nothing (in a cluster, on the node that
// serves the key). If no replica acknowledges
// within a quarter of the TTL (and half the op timeout, which bounds the
// pipeline's read), the lease is given back (a release it records) and
// the outcome is indeterminate: the lease comes back with the error, so
// that the acquire is recorded under its token.
func (s *SetNXWait) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := s.newLease(key, ttl)
	pipe, err := pipelineFor(ctx, s.c, key)
	if err != nil {
		return Lease{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	set := pipe.SetArgs(ctx, key, l.Token, redis.SetArgs{Mode: "NX", TTL: ttl})
	wait := pipe.Do(ctx, "wait", 1, waitLimit(ttl, s.opTimeout).Milliseconds())
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if err := setErr(key, set.Err()); err != nil {
		return Lease{}, err
	}
	n, err := wait.Int64()
	if err == nil && n >= 1 {
		return l, nil
	}
	// The key was set: the acquire is indeterminate under its token, and
	// giving it back is a release the history must show.
	call := s.now()
	rerr := s.SetNX.Release(ctx, l)
	Record(s.record, history.Op{Process: ClientFrom(ctx), F: history.Release, Key: key, Token: l.Token,
		Call: call, Return: s.now()}, rerr)
	if err == nil {
		err = errNotReplicated
	}
	return l, fmt.Errorf("acquire %s: %w", key, err)
}

// waitLimit is how long a WAIT waits: a quarter of the TTL, and at most
// half the op timeout, which bounds the pipeline's read.
func waitLimit(ttl, opTimeout time.Duration) time.Duration {
	limit := opTimeout / 2
	if limit <= 0 {
		limit = 1500 * time.Millisecond // half go-redis's default 3s
	}
	return max(min(ttl/4, limit), time.Millisecond)
}

// setnxWaitEntry registers "setnx-wait".
var setnxWaitEntry = Entry{Name: "setnx-wait", Factory: NewSetNXWait, Waits: true,
	Description: "setnx plus WAIT 1 after acquiring (sentinel or cluster topology): narrows, does not close, the failover window"}
