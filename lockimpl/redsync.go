package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Redsync adapts github.com/go-redsync/redsync/v4, the most used Go
// Redlock, as it is: one Mutex per acquisition, one try (the workload
// retries), its own token, drift factor and quorum. Its per-node timeout
// is its default (the TTL x 0.05).
type Redsync struct {
	clients []redis.UniversalClient
	rs      *redsync.Redsync
	now     func() int64
}

// NewRedsync is the Factory of "redsync".
func NewRedsync(env Env) (Locker, error) {
	if len(env.Addrs) == 0 {
		return nil, errors.New("redsync: no redis address")
	}
	clients, err := nodeClients(env)
	if err != nil {
		return nil, err
	}
	r := &Redsync{clients: clients, now: ClockOf(env)}
	var pools []rsredis.Pool
	for _, c := range clients {
		pools = append(pools, goredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	return r, nil
}

// redsyncErr maps redsync's errors: a taken lock (ErrTaken, or only
// ErrNodeTaken per node) or a plain ErrFailed is definite. An error from a
// node (RedisError: a timeout) leaves the outcome unknown; so does a node
// that refused the connection, except for an acquire (refusedIsNo: a
// down node granted nothing, and the attempt was given back).
func redsyncErr(what, key string, err error, refusedIsNo bool, definite error) error {
	if unknownNode(err, refusedIsNo) {
		return fmt.Errorf("%s %s: %w", what, key, err)
	}
	if err == nil || errors.Is(err, redsync.ErrFailed) || errors.Is(err, redsync.ErrExtendFailed) ||
		errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, new(*redsync.ErrTaken)) || errors.As(err, new(*redsync.ErrNodeTaken)) {
		return definite
	}
	return fmt.Errorf("%s %s: %w", what, key, err)
}

// Acquire implements Locker.
func (r *Redsync) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	start := time.Duration(r.now())
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	if err := m.TryLockContext(ctx); err != nil {
		// redsync gives back a failed attempt; without a node error it
		// reached no majority and says nothing about a holder.
		return Lease{}, redsyncErr("acquire", key, err, true, fmt.Errorf("acquire %s: %w: %v", key, ErrUndone, err))
	}
	// Until is validity measured on our clock; the lease ends there.
	return Lease{Key: key, Token: m.Value(), Acquired: start, TTL: time.Until(m.Until()) + time.Duration(r.now()) - start, Handle: m}, nil
}

// unknownNode reports whether err, as redsync joins them, holds a node
// error (other than a refused connection, if refusedIsNo).
func unknownNode(err error, refusedIsNo bool) bool {
	if err == nil {
		return false
	}
	if re, ok := err.(*redsync.RedisError); ok {
		return !refusedIsNo || !refused(re.Err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if unknownNode(e, refusedIsNo) {
				return true
			}
		}
		return false
	}
	if u := errors.Unwrap(err); u != nil {
		return unknownNode(u, refusedIsNo)
	}
	return false
}

func mutexOf(l Lease) (*redsync.Mutex, error) {
	m, ok := l.Handle.(*redsync.Mutex)
	if !ok {
		return nil, fmt.Errorf("redsync: lease of %s has no mutex", l.Key)
	}
	return m, nil
}

// Release implements Locker.
func (r *Redsync) Release(ctx context.Context, l Lease) error {
	m, err := mutexOf(l)
	if err != nil {
		return err
	}
	if ok, err := m.UnlockContext(ctx); !ok {
		return redsyncErr("release", l.Key, err, false, ErrNotHeld)
	}
	return nil
}

// Extend implements Locker. A redsync Mutex extends by its own expiry, so
// ttl must be the one it was acquired with (the workload's TTL).
func (r *Redsync) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	m, err := mutexOf(l)
	if err != nil {
		return Lease{}, err
	}
	start := time.Duration(r.now())
	if ok, err := m.ExtendContext(ctx); !ok {
		return Lease{}, redsyncErr("extend", l.Key, err, false, ErrNotHeld)
	}
	l.Acquired, l.TTL = start, time.Until(m.Until())+time.Duration(r.now())-start
	return l, nil
}

// Close implements Closer.
func (r *Redsync) Close() error { return closeAll(r.clients) }

// redsyncEntry registers "redsync".
var redsyncEntry = Entry{Name: "redsync", Factory: NewRedsync, Topology: "redlock",
	Description: "github.com/go-redsync/redsync/v4 as it is (topology redlock): its Redlock, one try per acquire"}
