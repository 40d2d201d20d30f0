package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetNXWait is SetNX plus WAIT for one replica after acquiring: the lock
// key is on a replica before the client proceeds, which narrows but does not
// close the window in which a failover loses it (WAIT does not make
// replication synchronous; a promoted replica may still lack a later
// write, and the TTL keeps running).
type SetNXWait struct{ *SetNX }

// NewSetNXWait is the Factory of "setnx-wait".
func NewSetNXWait(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	return &SetNXWait{s.(*SetNX)}, nil
}

// errNotReplicated: the key was set but no replica confirmed it in time.
var errNotReplicated = errors.New("lock not replicated in time")

// Acquire implements Locker. SET and WAIT go in one pipeline: WAIT covers
// the writes of its own connection only, so on another pooled connection it
// would return at once and wait for nothing. If no replica acknowledges
// within a quarter of the TTL (and half the op timeout, which bounds the
// pipeline's read), the lease is given back and the outcome is
// indeterminate.
func (s *SetNXWait) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := s.newLease(key, ttl)
	limit := s.opTimeout / 2
	if limit <= 0 {
		limit = 1500 * time.Millisecond // half go-redis's default 3s
	}
	pipe := s.c.Pipeline()
	set := pipe.SetArgs(ctx, key, l.Token, redis.SetArgs{Mode: "NX", TTL: ttl})
	wait := pipe.Do(ctx, "wait", 1, max(min(ttl/4, limit), time.Millisecond).Milliseconds())
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if err := setErr(key, set.Err()); err != nil {
		return Lease{}, err
	}
	n, err := wait.Int64()
	if err == nil && n >= 1 {
		return l, nil
	}
	_ = s.SetNX.Release(ctx, l)
	if err == nil {
		err = errNotReplicated
	}
	return Lease{}, fmt.Errorf("acquire %s: %w", key, err)
}

// setnxWaitEntry registers "setnx-wait".
var setnxWaitEntry = Entry{Name: "setnx-wait", Factory: NewSetNXWait,
	Description: "setnx plus WAIT 1 after acquiring (sentinel topology): narrows, does not close, the failover window"}
