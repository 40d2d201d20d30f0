package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// MaxReenter is the deepest --reenter a run takes.
const MaxReenter = 64

// validateReenter says what is wrong with --reenter: a depth the history
// can record, and no client-side watchdog (--extend-every), whose
// wrapper around Acquire does not see re-entries.
func (c Config) validateReenter() error {
	switch {
	case c.Reenter < 0 || c.Reenter > MaxReenter:
		return fmt.Errorf("--reenter %d: want 0 (no re-entry) to %d", c.Reenter, MaxReenter)
	case c.Reenter > 0 && c.ExtendEvery > 0:
		return fmt.Errorf("--reenter %d with --extend-every %v: re-entries run without the client-side watchdog; drop one", c.Reenter, c.ExtendEvery)
	}
	return nil
}

// reenterIn sets up the runner's re-entries (--reenter N): locker must
// be a lockimpl.Reenterer, found before anything wraps it. 0 leaves every
// acquire a new owner's (judged as a mutex).
func (r *Runner) reenterIn(locker lockimpl.Locker, name string, depth int) error {
	if depth <= 0 {
		return nil
	}
	re, ok := locker.(lockimpl.Reenterer)
	if !ok {
		return ConfigErr(fmt.Errorf("lock %s cannot re-enter: --reenter %d needs a reentrant lock (reentrant; lockcheck list), or drop --reenter", name, depth))
	}
	r.reenterer = re
	return nil
}

// holdNested is a reentrant holder's time between its outer acquire and
// its outer release (the caller's): it re-enters to depth --reenter
// while its deadline is ahead (each re-entry an acquire of its depth
// under the owner's token), holds at the innermost as hold does (its
// section, and the pauses a fault gives it there), and then releases a
// hold at a time, writing again in each section it returns to while
// that section's own deadline is ahead (the lease as that level's
// acquire set it: an inner re-entry that the lock granted on a key that
// had ended would free it at its release). A lock whose inner release
// frees the key is caught at the resource: another owner takes the key
// while the outer write runs. A client armed by pause-client stops, half
// the time, between the check of its deadline and its first re-entry
// (a GC pause there): a lock whose re-entry does not ask whose the key is
// grants it into the next owner's hold. It returns the outer lease, for
// the outer release.
func (r *Runner) holdNested(ctx context.Context, c *client, outer lockimpl.Lease) lockimpl.Lease {
	levels := []lockimpl.Lease{outer}
	for top := outer; len(levels) < r.cfg.Reenter && ctx.Err() == nil && r.clientNow(c, top) < int64(top.Deadline())-int64(r.cfg.Margin); {
		if len(levels) == 1 && c.rng.IntN(2) == 0 {
			if d := r.takePause(c, false); d > 0 {
				r.pauseClient(ctx, c, d)
			}
		}
		l, ok := r.reenter(ctx, c, top, len(levels)+1)
		if !ok {
			break
		}
		top, levels = l, append(levels, l)
	}
	r.hold(ctx, c, levels[len(levels)-1])
	for len(levels) > 1 {
		inner := levels[len(levels)-1]
		levels = levels[:len(levels)-1]
		if err := r.release(ctx, c, inner); err != nil || ctx.Err() != nil {
			break // it no longer holds for sure: no more writes
		}
		if l := levels[len(levels)-1]; r.clientNow(c, l) < int64(l.Deadline())-int64(r.cfg.Margin) {
			r.section(ctx, c, l, r.now()+int64(r.holdTime(c)), true)
		}
	}
	return outer
}

// reenter is one re-entry of l's owner, recorded as an acquire of depth
// depth under l's token.
func (r *Runner) reenter(ctx context.Context, c *client, l lockimpl.Lease, depth int) (lockimpl.Lease, bool) {
	octx, end := r.cancellable(r.opCtx(c), c)
	defer end()
	// call before the request, ret after its reply, as attempt reads them.
	call := r.now()
	nl, err := r.reenterer.Reenter(octx, l, r.cfg.TTL)
	ret := r.now()
	if r.notSent(ctx, err) {
		return lockimpl.Lease{}, false
	}
	lockimpl.Record(r.record, history.Op{Process: c.id, F: history.Acquire, Key: l.Key, Token: l.Token, Fence: nl.Fence,
		TTLms: r.keyTTLms, Depth: depth, Call: call, Return: ret}, err)
	r.badLock(err)
	if errors.Is(err, ErrCrashed) {
		r.die(c)
	}
	if err != nil {
		return lockimpl.Lease{}, false
	}
	if nl.Acquired == 0 || time.Duration(call) < nl.Acquired {
		nl.Acquired = time.Duration(call) // never a deadline too late
	}
	return nl, true
}
