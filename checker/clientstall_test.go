package checker

import (
	"context"
	"testing"
	"time"
)

// clientStallOptions check the kept run of a client stalled under load
// as it was run: tolerance 50 ms, horizon 3 s (op timeout 2 s + 1 s).
var clientStallOptions = Options{ClockTolerance: Exactly(50 * time.Millisecond), InfoHorizon: Exactly(3 * time.Second), Timeout: 2 * time.Minute}

// TestLinearizable_ClientStallDecided: one key of a correct lock's run
// (fenced, harness's proof workload: 200 clients on 5 keys, TTL 100 ms,
// no retry) whose lockcheck process was stopped 300 ms of every 800 ms,
// as a CI runner's load stopped it when TestRun_CorrectLocksValid/fenced
// ran out of its 2 minutes on a key of 5,767 ops: 11,140 lock ops, 11,032
// of them refusals, two acquires granted across one stop. Its first
// witness put them in the wrong order and left 47 refusals of the stop
// without a holder; searched all at once they took 1.9 s here (-race:
// 22 s), told sparsely (sparse) the key is decided in milliseconds.
func TestLinearizable_ClientStallDecided(t *testing.T) {
	ops := pauseRedisHistory(t, "client-stall-fenced.jsonl.gz")
	before := sparsed.Load()
	res := LinearizableMutex(context.Background(), ops, clientStallOptions.Resolved())
	if res.Verdict != Valid {
		t.Fatalf("%s: %+v", res.Verdict, res.Undecided)
	}
	if sparsed.Load() == before {
		t.Errorf("valid without a sparse round: the test no longer exercises sparse")
	}
}

// BenchmarkLinearizable_ClientStall decides that key with its misfits
// told sparsely and, side by side, all at once (skipSparse).
func BenchmarkLinearizable_ClientStall(b *testing.B) {
	ops := pauseRedisHistory(b, "client-stall-fenced.jsonl.gz")
	for _, bc := range []struct {
		name string
		skip reductions
	}{{"sparse", 0}, {"every-misfit", skipSparse}} {
		b.Run(bc.name, func(b *testing.B) {
			o := clientStallOptions
			o.skip = bc.skip
			for b.Loop() {
				if res := LinearizableMutex(context.Background(), ops, o.Resolved()); res.Verdict != Valid {
					b.Fatalf("%s", res.Verdict)
				}
			}
		})
	}
}
