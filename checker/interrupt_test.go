package checker

import (
	"context"
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
	timer := time.AfterFunc(300*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	r := Linearizable(ctx, ops, Options{ClockTolerance: 50 * time.Millisecond, Timeout: 10 * time.Minute, skip: skipEDF}.Resolved())
	took := time.Since(start)
	if r.Verdict != Unknown || len(r.Undecided) == 0 {
		t.Fatalf("interrupted check: %s %+v, want unknown", r.Verdict, r.Undecided)
	}
	for _, u := range r.Undecided {
		if u.Reason != Interrupted {
			t.Errorf("key %s undecided for %q, want %q", u.Key, u.Reason, Interrupted)
		}
	}
	// Far from the 10 min timeout: the search stopped when told to.
	if took > time.Minute {
		t.Errorf("the interrupted check took %v", took)
	}
	t.Logf("interrupted after 300 ms, returned after %v: %s", took, r.Note)
}
