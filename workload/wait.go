package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// waitIn sets up the runner's blocking acquires (--wait): locker must be
// a lockimpl.Waiter with a wake-up bound the history can record, found
// before anything wraps it. A wait of 0 leaves every acquire a try.
func (r *Runner) waitIn(locker lockimpl.Locker, name string, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	w, ok := lockimpl.WaiterOf(locker)
	if !ok {
		return ConfigErr(fmt.Errorf("lock %s cannot wait: --wait %v needs a blocking lock (setnx-block; lockcheck list), or drop --wait", name, wait))
	}
	if b := w.WakeBound(); b < time.Millisecond || b.Milliseconds() > history.MaxTTLms {
		return ConfigErr(fmt.Errorf("lock %s declares a wake-up bound of %v: want 1ms to %v", name, b, time.Duration(history.MaxTTLms)*time.Millisecond))
	}
	r.waiter = w
	return nil
}

// tryAcquire is one acquire attempt: a blocking one (--wait) waits in
// the lock.
func (r *Runner) tryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	if r.waiter != nil {
		return r.waiter.AcquireWait(ctx, key, r.cfg.TTL, r.cfg.Wait)
	}
	return r.locker.Acquire(ctx, key, r.cfg.TTL)
}

// markWait records a blocking acquire's wait and its lock's bound on op,
// and, on one that took the lock, the instant the lock says it sent the
// try that took it (lease.Acquired), where it lies in op's interval.
func (r *Runner) markWait(op *history.Op, lease lockimpl.Lease, err error) {
	if r.waiter == nil {
		return
	}
	op.WaitMs = r.cfg.Wait.Milliseconds()
	op.WakeMs = (r.waiter.WakeBound() + time.Millisecond - 1).Milliseconds() // up: never stricter than declared
	if t := int64(lease.Acquired); err == nil && t >= op.Call && t <= op.Return {
		op.Tried = t
	}
}
