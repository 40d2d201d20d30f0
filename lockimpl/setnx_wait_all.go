package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetNXWaitAll is setnx whose every command waits for every replica: each
// goes in one pipeline with WAIT n, n the replicas the master had when the
// lock was built, and its outcome counts only if all n acknowledged it in
// time; otherwise it is indeterminate (a replica lacks it, and Sentinel
// may promote that one). An acquire refused, a release or an extend done
// or refused, on a master whose replicas did not all catch up is
// indeterminate too: what it read or wrote may not survive a failover.
// The client learns nothing a promotion can take back, at the price of
// every op in a split brain or a replication stall ending indeterminate.
// This is Redisson's synced lock (WAIT on every lock command) with the
// result of WAIT checked, the fix of Redisson #3994.
type SetNXWaitAll struct {
	*SetNX
	replicas int64
	// ignoreWait: broken-wait-ignored.
	ignoreWait bool
}

// NewSetNXWaitAll is the Factory of "setnx-wait-all".
func NewSetNXWaitAll(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	l := &SetNXWaitAll{SetNX: s.(*SetNX)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := l.c.Info(ctx, "replication").Result()
	if err != nil {
		l.c.Close()
		return nil, fmt.Errorf("count the master's replicas: %w", err)
	}
	m := connectedReplicas.FindStringSubmatch(info)
	if m == nil {
		l.c.Close()
		return nil, fmt.Errorf("%w: no connected_slaves in INFO replication", ErrBadLock)
	}
	l.replicas, _ = strconv.ParseInt(m[1], 10, 64)
	if l.replicas == 0 {
		l.c.Close()
		return nil, fmt.Errorf("%w: the master has no replica to wait for (topology sentinel)", ErrBadLock)
	}
	return l, nil
}

var connectedReplicas = regexp.MustCompile(`(?m)^connected_slaves:(\d+)`)

// errNotSynced: a command's outcome that not every replica acknowledged.
var errNotSynced = errors.New("not every replica acknowledged it in time")

// synced runs cmd and WAIT for every replica in one pipeline (WAIT covers
// the writes of its own connection) and says whether all acknowledged.
func (s *SetNXWaitAll) synced(ctx context.Context, ttl time.Duration, cmd func(redis.Pipeliner)) bool {
	pipe := s.c.Pipeline()
	cmd(pipe)
	wait := pipe.Do(ctx, "wait", s.replicas, waitLimit(ttl, s.opTimeout).Milliseconds())
	_, _ = pipe.Exec(ctx) // each command's own error is read by the caller
	n, err := wait.Int64()
	return s.ignoreWait || (err == nil && n >= s.replicas)
}

// Acquire implements Locker. A SET that took effect without every
// replica's acknowledgement is indeterminate under its token.
func (s *SetNXWaitAll) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := s.newLease(key, ttl)
	var set *redis.StatusCmd
	synced := s.synced(ctx, ttl, func(p redis.Pipeliner) { set = p.SetArgs(ctx, key, l.Token, redis.SetArgs{Mode: "NX", TTL: ttl}) })
	err := setErr(key, set.Err())
	switch {
	case errors.Is(err, ErrNotAcquired) && !synced:
		return Lease{}, fmt.Errorf("acquire %s: refused, but %w", key, errNotSynced)
	case err != nil:
		return l, err // under its token, as setnx's acquire
	case !synced:
		return l, fmt.Errorf("acquire %s: %w", key, errNotSynced)
	}
	return l, nil
}

// Release implements Locker.
func (s *SetNXWaitAll) Release(ctx context.Context, l Lease) error {
	return s.script(ctx, releaseScript, "release", l.Key, l.TTL, l.Token)
}

// Extend implements Locker.
func (s *SetNXWaitAll) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(s.now())
	if err := s.script(ctx, extendScript, "extend", l.Key, ttl, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// script runs a compare-and-X script (1: done, 0: not ours) with WAIT.
func (s *SetNXWaitAll) script(ctx context.Context, sc *redis.Script, what, key string, ttl time.Duration, args ...any) error {
	var res *redis.Cmd
	synced := s.synced(ctx, ttl, func(p redis.Pipeliner) { res = sc.Eval(ctx, p, []string{key}, args...) })
	n, err := res.Int64()
	switch {
	case err != nil:
		return firstErr(what, key, err)
	case !synced:
		return fmt.Errorf("%s %s: %w", what, key, errNotSynced)
	case n != 1:
		return ErrNotHeld
	}
	return nil
}

// setnxWaitAllEntry registers "setnx-wait-all".
var setnxWaitAllEntry = Entry{Name: "setnx-wait-all", Factory: NewSetNXWaitAll, Waits: true, Topology: "sentinel",
	Description: "setnx whose every command is followed by WAIT for every replica in one pipeline; an outcome not every replica acknowledged is indeterminate (Redisson's synced lock with WAIT's result checked: the fix of Redisson #3994)"}
