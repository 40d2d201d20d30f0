package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/lockcheck/lockcheck/internal/ctxwait"
)

// Waiter is implemented by a lock whose acquire can block (--wait): the
// lock itself waits for the key, polling or woken by pub/sub, as
// Redisson's lock(), Laravel's block() and Symfony's blocking acquire do.
//
// AcquireWait waits up to wait for key and returns ErrNotAcquired only
// once its wait ran out. The lease it returns has Acquired set to when
// the lock sent the try that took the key (the grant was no earlier:
// the waiter waited until then). WakeBound is the longest the lock lets
// a waiter sleep while its key is free, as the lock declares it: the
// starved-waiter check (checker.StarvedWaiters) judges the lock by it.
// The two go together: a wait no bound is declared for cannot be judged.
type Waiter interface {
	AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error)
	WakeBound() time.Duration
}

// WaiterOf is l as a Waiter, if it can wait: a lock that says whether it
// can (CanWait, a lock process by its ping's reply) is one only if it
// says so.
func WaiterOf(l Locker) (Waiter, bool) {
	w, ok := l.(Waiter)
	if c, says := l.(interface{ CanWait() bool }); ok && says && !c.CanWait() {
		return nil, false
	}
	return w, ok
}

// DefaultPoll is setnx-block's poll interval and DefaultWakeBound the
// wake-up bound it declares: forty polls inside it, so that a waiter on
// a busy machine (a reply late, a sleep overshot) still wakes within it.
const (
	DefaultPoll      = 25 * time.Millisecond
	DefaultWakeBound = time.Second
)

// SetNXBlock is the correct polling waiter: SetNX's acquire tried every
// poll interval under one token until it takes the key or its wait runs
// out, with a last try at the wait's end; SetNX's release and extend.
type SetNXBlock struct {
	*SetNX
	poll, bound time.Duration
}

// NewSetNXBlock is the Factory of "setnx-block".
func NewSetNXBlock(env Env) (Locker, error) {
	return newPoller(env, DefaultPoll, DefaultWakeBound)
}

func newPoller(env Env, poll, bound time.Duration) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	return &SetNXBlock{SetNX: s.(*SetNX), poll: poll, bound: bound}, nil
}

// WakeBound implements Waiter.
func (s *SetNXBlock) WakeBound() time.Duration { return s.bound }

// AcquireWait implements Waiter. A try that is not a definite refusal
// ends the wait: an indeterminate one comes back with its lease, so that
// the acquire is recorded under its token (later tries would take the
// key under the same token and hide whether it did); one not sent means
// no try took effect (every one before it was refused).
func (s *SetNXBlock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	l := s.newLease(key, ttl)
	return pollAcquire(ctx, s.now, wait, s.poll, func() (Lease, error) {
		l.Acquired = time.Duration(s.now())
		return s.acquire(ctx, l)
	})
}

// pollAcquire is a polling waiter's loop: try, every poll until wait
// (on the clock now) runs out, with a last try at its end. A try that
// is not a definite refusal ends it; so does ctx, refused.
func pollAcquire(ctx context.Context, now func() int64, wait, poll time.Duration, try func() (Lease, error)) (Lease, error) {
	deadline := now() + int64(wait)
	for {
		got, err := try()
		if !errors.Is(err, ErrNotAcquired) {
			return got, err
		}
		left := deadline - now()
		if left <= 0 || !ctxwait.Sleep(ctx, min(poll, time.Duration(left))) {
			return Lease{}, err // refused, and the wait ran out or the caller stopped waiting
		}
	}
}

// setnxBlockEntry registers "setnx-block".
var setnxBlockEntry = Entry{Name: "setnx-block", Factory: NewSetNXBlock,
	Description: "setnx whose acquire waits (--wait): SET NX tried every 25 ms under one token until it takes the key or the wait runs out; declares a wake-up bound of 1 s"}

// brokenWaitSlowPollEntry is "broken-wait-slow-poll": a waiter whose
// poll interval exceeds the wake-up bound it declares (as Laravel's
// block() sleeps 250 ms a poll whatever its caller was promised): a key
// freed just after a try stays free for most of a poll while its waiter
// sleeps.
var brokenWaitSlowPollEntry = Entry{Name: "broken-wait-slow-poll", Broken: true,
	Factory:     func(env Env) (Locker, error) { return newPoller(env, time.Second, 250*time.Millisecond) },
	Description: "setnx-block that polls every 1 s but declares a wake-up bound of 250 ms: its waiters sleep on keys that are free"}
