package harness_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// never is a channel no one closes: what a stalled lock waits on.
var never = make(chan struct{})

// stalledAcquire is a lock whose Acquire never returns, whatever its ctx.
type stalledAcquire struct{ lockimpl.Locker }

func (stalledAcquire) Acquire(context.Context, string, time.Duration) (lockimpl.Lease, error) {
	<-never
	return lockimpl.Lease{}, nil
}

// stalledClose is a correct lock whose Close never returns.
type stalledClose struct{ lockimpl.Locker }

func (stalledClose) Close() error { <-never; return nil }

// TestRun_StalledPhaseNamed: a lock that stalls a phase of the run (its
// acquire never returns, its close never returns) ends the run within
// the phase's deadline and its grace, with a PhaseError naming the phase,
// and nothing left running.
func TestRun_StalledPhaseNamed(t *testing.T) {
	testutil.RequireRedis(t)
	const drain, closeLimit, grace = 2 * time.Second, 2 * time.Second, time.Second
	defer harness.SetLimits(drain, closeLimit, grace)()
	w := workload.Config{Clients: 4, Keys: 2, Duration: time.Second, TTL: 200 * time.Millisecond, OpTimeout: 500 * time.Millisecond, Seed: 1}
	for _, c := range []struct {
		phase string
		wrap  func(lockimpl.Locker) lockimpl.Locker
		// bound is how long the clients and the phase may take.
		bound time.Duration
	}{
		{"play", func(l lockimpl.Locker) lockimpl.Locker { return stalledAcquire{l} }, w.Duration + w.OpTimeout + drain + grace},
		{"close", func(l lockimpl.Locker) lockimpl.Locker { return stalledClose{l} }, w.Duration + w.OpTimeout + closeLimit + grace},
	} {
		t.Run(c.phase, func(t *testing.T) {
			began := time.Now()
			_, err := harness.Run(context.Background(), harness.Config{OutDir: t.TempDir(), Lock: "stalled-" + c.phase, Workload: w,
				Factory: func(env lockimpl.Env) (lockimpl.Locker, error) {
					l, err := lockimpl.NewSetNX(env)
					return c.wrap(l), err
				}})
			took := time.Since(began)
			testutil.NoRedisChildren(t)
			var pe *harness.PhaseError
			if !errors.As(err, &pe) || pe.Phase != c.phase || !pe.Abandoned {
				t.Fatalf("got %v, want phase %s named, abandoned", err, c.phase)
			}
			// Redis's start and stop on a loaded machine: 15 s more.
			if bound := c.bound + 15*time.Second; took > bound {
				t.Errorf("the run took %v, want at most %v", took, bound)
			}
		})
	}
}

// TestRun_RedisStopsInTheDrain: Redis stops answering (SIGSTOP) just
// before the run's time is up, so every op the clients have in flight
// then, and every release they would make, hangs on it. The clients give
// up after the op timeout, the drain ends, the history is checked with
// those ops indeterminate, and the run ends within its play deadline
// with a verdict, no phase past its deadline.
func TestRun_RedisStopsInTheDrain(t *testing.T) {
	c := testutil.StartRedis(t)
	defer c.Nodes[0].Resume()
	w := workload.Config{Clients: 20, Keys: 3, Duration: 2 * time.Second, TTL: 200 * time.Millisecond, Hold: 50 * time.Millisecond,
		OpTimeout: 500 * time.Millisecond, Seed: 1}
	stop := time.AfterFunc(w.Duration-300*time.Millisecond, func() { _ = c.Nodes[0].Pause() })
	defer stop.Stop()
	began := time.Now()
	res, err := harness.Run(context.Background(), harness.Config{OutDir: t.TempDir(), Running: c, Lock: "setnx", Workload: w})
	took := time.Since(began)
	if err != nil {
		t.Fatalf("run with Redis stopped in its drain: %v, want a verdict and no phase past its deadline", err)
	}
	if res.Verdict == "" || res.Summary.Ops.Total() == 0 {
		t.Fatalf("no verdict over what was recorded: %+v", res.Summary)
	}
	info := 0
	for _, m := range res.Summary.Ops {
		info += int(m[history.Info])
	}
	if info == 0 {
		t.Errorf("no op ended indeterminate: Redis's stop did not land in the drain")
	}
	// The clients' time, an op timeout, and the check: 10 s on a loaded
	// machine, far inside the play deadline (duration + op timeout + 45 s).
	if bound := w.Duration + w.OpTimeout + 10*time.Second; took > bound {
		t.Errorf("the run took %v, want at most %v", took, bound)
	}
}
