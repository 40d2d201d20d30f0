package workload

import (
	"context"
	"fmt"
	"math"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// A read-write run (--readers F): each acquire is a read with chance F,
// a write otherwise, drawn by the client; the lock takes the mode from
// the op's context (lockimpl.WithAccess) and the history records it on
// the acquire (history.Op.Access). F = 0 is a mutex's run: no draw, no
// mode recorded.

// validateReaders says what is wrong with --readers.
func (c Config) validateReaders() error {
	switch {
	case c.Readers < 0 || c.Readers > 1 || math.IsNaN(c.Readers):
		return fmt.Errorf("--readers %v: want a fraction from 0 (a mutex's run) to 1 (readers only)", c.Readers)
	case c.Readers > 0 && c.Permits > 1:
		return fmt.Errorf("--readers %v with --permits %d: a run has one shape (a read-write lock or a semaphore); drop one", c.Readers, c.Permits)
	}
	return nil
}

// readersIn says why locker (named name) cannot run with readers, if it
// cannot: only a read-write lock takes a mode, and one that declares
// writer preference is not judged by it yet.
func readersIn(locker lockimpl.Locker, name string, readers float64) error {
	if readers == 0 {
		return nil
	}
	if _, ok := lockimpl.ReadWriterOf(locker); !ok {
		return ConfigErr(fmt.Errorf("lock %s is not a read-write lock: --readers %v needs one (lockcheck list; --readers 0 runs it as a mutex)", name, readers))
	}
	if lockimpl.WritersPreferredOf(locker) {
		return ConfigErr(fmt.Errorf("lock %s declares writer preference, which lockcheck does not judge yet: run it with --readers 0", name))
	}
	return nil
}

// drawAccess is the mode of c's next acquire and ctx tagged with it: ""
// and ctx as it is in a mutex's run.
func (r *Runner) drawAccess(ctx context.Context, c *client) (context.Context, string) {
	if r.cfg.Readers == 0 {
		return ctx, ""
	}
	access := history.AccessWrite
	if c.rng.Float64() < r.cfg.Readers {
		access = history.AccessRead
	}
	return lockimpl.WithAccess(ctx, access), access
}
