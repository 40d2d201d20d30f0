package checker

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLinearizable_Interrupted: a check stopped mid-search (Ctrl-C,
// SIGTERM: the caller's context cancelled) ends at once, not at its
// timeout: porcupine takes a timer, not a context, and without the steps
// that fail once the context is done a search already running would run
// on to its 10 minutes. The key not decided is unknown, and says why.
func TestLinearizable_Interrupted(t *testing.T) {
	// A key porcupine alone does not decide in 10 s
	// (BenchmarkLinearizable_SlowOps_Wide_Porcupine).
	ops := genSlowOps(2, 40, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	// The interrupt comes once the check has spent 300 ms of CPU (its
	// set-up of 80 ops takes far less: the search is running), an event
	// a busy machine delays but cannot skip, as it could a timer.
	var cancelled atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer cancel()
		from := cpuTime()
		for cpuTime()-from < 300*time.Millisecond {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancelled.Store(time.Now().UnixNano())
	}()
	r := Linearizable(ctx, ops, Options{ClockTolerance: 50 * time.Millisecond, Timeout: 10 * time.Minute, skip: skipEDF}.Resolved())
	returned := time.Now()
	if r.Verdict != Unknown || len(r.Undecided) == 0 {
		t.Fatalf("interrupted check: %s %+v, want unknown", r.Verdict, r.Undecided)
	}
	for _, u := range r.Undecided {
		if u.Reason != Interrupted {
			t.Errorf("key %s undecided for %q, want %q", u.Key, u.Reason, Interrupted)
		}
	}
	at := cancelled.Load()
	if at == 0 {
		t.Fatal("the check returned before the interrupt")
	}
	// Far from the 10 min timeout: the search stopped when told to (a
	// minute holds a loaded machine's delays).
	took := returned.Sub(time.Unix(0, at))
	if took > time.Minute {
		t.Errorf("the interrupted check took %v after the interrupt to return", took)
	}
	t.Logf("interrupted after 300 ms of CPU, returned %v later: %s", took, r.Note)
}

// cpuTime is the user and system CPU time this process has spent.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
