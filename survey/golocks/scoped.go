// Package golocks adapts Go lock libraries, unmodified, to lockcheck's
// Locker, for the survey (docs/survey.md): each as its own documentation
// shows it used. Register adds them to lockcheck's registry.
package golocks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// tryFunc is a library's non-blocking acquire of a context-scoped lock:
// the lock is held while the returned context is live; cancel releases
// it (rueidislock.Locker.TryWithContext).
type tryFunc func(ctx context.Context, name string) (context.Context, context.CancelFunc, error)

// scoped adapts a context-scoped lock: a lease is the library's context,
// watched, so that the holder leaves its critical section when the
// library cancels it (lockimpl.NewScope). The library keeps its keys
// alive itself and says nothing of a deadline, so the lease contract is
// not judged (Scope).
type scoped struct {
	name      string
	try       func(ttl time.Duration) (tryFunc, error)
	notLocked error
	now       func() int64
	close     func()

	mu    sync.Mutex
	holds map[string]*hold // by token
}

// hold is one lease: the library's cancel, and whether the holder let go.
type hold struct {
	cancel   context.CancelFunc
	released atomic.Bool
	lost     <-chan struct{}
}

// Scope implements lockimpl.Scoped.
func (s *scoped) Scope() string {
	return s.name + " hands out a context it cancels when it can no longer keep the lock, not a token and a deadline; its renewals are its own"
}

// Acquire implements lockimpl.Locker: one try, never a wait (the
// workload retries). The context given to the library is not the op's:
// the library would cancel the lease with it, and cut its validity to
// the op's deadline.
func (s *scoped) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	try, err := s.try(ttl)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	call := time.Duration(s.now())
	lctx, cancel, err := try(context.Background(), key)
	switch {
	case errors.Is(err, s.notLocked):
		return lockimpl.Lease{}, lockimpl.ErrNotAcquired
	case err != nil:
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %s: %w", s.name, key, err)
	}
	token := lockimpl.NewToken()
	w := lockimpl.NewScope()
	h := &hold{cancel: cancel, lost: w.Lost()}
	go func() {
		<-lctx.Done()
		if !h.released.Load() {
			w.Lose(fmt.Errorf("%s cancelled the lock's context: %w", s.name, context.Cause(lctx)))
		}
	}()
	s.mu.Lock()
	s.holds[token] = h
	s.mu.Unlock()
	return lockimpl.Lease{Key: key, Token: token, Acquired: call, TTL: ttl, Watch: w}, nil
}

// Release implements lockimpl.Locker: the library's cancel, which
// deletes its keys before it returns. A lease the library had already
// let go is not held.
func (s *scoped) Release(ctx context.Context, l lockimpl.Lease) error {
	s.mu.Lock()
	h := s.holds[l.Token]
	delete(s.holds, l.Token)
	s.mu.Unlock()
	if h == nil {
		return lockimpl.ErrNotHeld
	}
	h.released.Store(true)
	h.cancel()
	select {
	case <-h.lost:
		return lockimpl.ErrNotHeld
	default:
		return nil
	}
}

// Extend implements lockimpl.Locker: a context-scoped lock renews itself
// and offers no extend (its Entry says Watchdog, so lockcheck sends none).
func (s *scoped) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	return lockimpl.Lease{}, fmt.Errorf("%w: %s has no extend: it renews its keys itself", lockimpl.ErrBadLock, s.name)
}

// Close implements lockimpl.Closer.
func (s *scoped) Close() error {
	s.close()
	return nil
}
