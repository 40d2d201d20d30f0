package checker

import (
	"context"
	"testing"
	"time"
)

// TestShapes_BoundedByMemory: a shape's search keeps no budget of its
// own states, so the process's memory bounds it (boundedByMemory): a
// hot semaphore key of 100,000 ops checked under a bound the process is
// already past ends unknown for want of memory, well before its time
// runs out; with the default bound the same key is decided valid. (A
// read-write lock's contention run of verify at 200 clients took the
// search to 24 GB of a 24 GB machine before this.)
func TestShapes_BoundedByMemory(t *testing.T) {
	ops := genSemaphoreKey(1, 8, 5, 100_000, int64(100*time.Millisecond), 0)
	opt := Options{Timeout: 2 * time.Minute, Memory: 1 << 20}.Resolved()
	start := time.Now()
	res := Linearizable(context.Background(), ops, opt)
	if res.Verdict != Unknown || len(res.Undecided) != 1 || res.Undecided[0].Reason != OutOfMemory {
		t.Fatalf("under 1 MiB: verdict %s, undecided %v; want unknown for want of memory", res.Verdict, res.Undecided)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("under 1 MiB the check took %v: the bound did not stop it", took)
	}
	if res := Linearizable(context.Background(), ops, Options{Timeout: 2 * time.Minute}.Resolved()); res.Verdict != Valid {
		t.Errorf("with the default bound: verdict %s (%v), want valid", res.Verdict, res.Undecided)
	}
}
