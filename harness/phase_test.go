package harness_test

import (
	"context"
	"errors"
	"sync"
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
// acquire never returns, its close never returns) ends the run at the
// phase's deadline (the one the test set, not the default) and its
// grace, with a PhaseError naming the phase, and nothing left running.
func TestRun_StalledPhaseNamed(t *testing.T) {
	testutil.RequireRedis(t)
	const drain, closeLimit, grace = 2 * time.Second, 2 * time.Second, time.Second
	defer harness.SetLimits(drain, closeLimit, grace)()
	w := workload.Config{Clients: 4, Keys: 2, Duration: time.Second, TTL: 200 * time.Millisecond, OpTimeout: 500 * time.Millisecond, Seed: 1}
	for _, c := range []struct {
		phase string
		wrap  func(lockimpl.Locker) lockimpl.Locker
		// limit is the phase's deadline as the test set it.
		limit time.Duration
	}{
		{"play", func(l lockimpl.Locker) lockimpl.Locker { return stalledAcquire{l} }, w.Duration + w.OpTimeout + drain},
		{"close", func(l lockimpl.Locker) lockimpl.Locker { return stalledClose{l} }, closeLimit},
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
			if !errors.As(err, &pe) || pe.Phase != c.phase || !pe.Abandoned || pe.Limit != c.limit {
				t.Fatalf("got %v, want phase %s named, abandoned at its deadline of %v", err, c.phase, c.limit)
			}
			// The product's deadlines, not this machine's speed: the
			// clients' time, the stalled phase's deadline and grace,
			// Redis's start and stop at their own limits. A stall not
			// abandoned would hold the run for ever.
			if bound := w.Duration + w.OpTimeout + c.limit + grace + harness.StartLimit + harness.StopLimit; took > bound {
				t.Errorf("the run with its %s phase stalled took %v, past its phases' deadlines (%v)", c.phase, took, bound)
			}
		})
	}
}

// TestRun_RedisStopsInTheDrain: Redis stops answering (SIGSTOP) once
// the clients have acquired, and stays stopped past the run's time, so
// every op the clients have in flight when it is up, and every release
// they would make, hangs on it. The clients give up after the op
// timeout, the drain ends within a drain limit made short (10 s, from
// 45 s), the history is checked with those ops indeterminate, and the
// run ends with a verdict, no phase past its deadline.
func TestRun_RedisStopsInTheDrain(t *testing.T) {
	c := testutil.StartRedis(t)
	defer c.Nodes[0].Resume()
	// Clients that waited on Redis rather than give up at the op timeout
	// would pass the play's deadline (duration + op timeout + drain).
	defer harness.SetLimits(10*time.Second, harness.CloseLimit, harness.PhaseGrace)()
	w := workload.Config{Clients: 20, Keys: 3, Duration: 2 * time.Second, TTL: 200 * time.Millisecond, Hold: 50 * time.Millisecond,
		OpTimeout: 500 * time.Millisecond, Seed: 1}
	// The stop comes on an event, the first grant (a busy machine can
	// take longer than the run's time to start its clients), not on a
	// clock that may fall before them or after them.
	var once sync.Once
	factory := func(env lockimpl.Env) (lockimpl.Locker, error) {
		l, err := lockimpl.NewSetNX(env)
		return stopsRedis{l, func() { once.Do(func() { _ = c.Nodes[0].Pause() }) }}, err
	}
	res, err := harness.Run(context.Background(), harness.Config{OutDir: t.TempDir(), Running: c, Lock: "setnx", Factory: factory, Workload: w})
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
		t.Errorf("no op ended indeterminate: Redis's stop did not land in the run")
	}
}

// stopsRedis is a lock that stops Redis (pause) once it has granted.
type stopsRedis struct {
	lockimpl.Locker
	pause func()
}

func (l stopsRedis) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, key, ttl)
	if err == nil {
		l.pause()
	}
	return lease, err
}

func (l stopsRedis) Close() error {
	if c, ok := l.Locker.(lockimpl.Closer); ok {
		return c.Close()
	}
	return nil
}
