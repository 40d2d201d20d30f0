package checker

import (
	"compress/gzip"
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// pauseRedisHistory reads a run of the pause-redis scenario kept in
// testdata: 20 clients on 3 keys, Redis stopped for 1 s every 2 s, each
// key with 14 to 25 indeterminate ops (acquires and releases that timed
// out while Redis stood still), checked as its run was (tolerance 50 ms,
// horizon 2.5 s).
func pauseRedisHistory(tb testing.TB, name string) []history.Op {
	tb.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	ops, err := history.Read(z)
	if err != nil {
		tb.Fatal(err)
	}
	return ops
}

var pauseRedisOptions = Options{ClockTolerance: Exactly(50 * time.Millisecond), InfoHorizon: Exactly(2500 * time.Millisecond), Timeout: 10 * time.Minute}

// TestReadWrite_PauseRedisDecided: the read-write lock's pause-redis run
// at seed 1, whose key lock:1 (741 lock ops, 14 indeterminate) verify
// left unknown after its 2 minutes, is decided valid (by the oracle of
// its shape: a correct lock's run), and its states were merged into
// hulls on the way. Without hulls the same key ran out of 2 minutes
// (BenchmarkShapes_PauseRedis measures both).
func TestReadWrite_PauseRedisDecided(t *testing.T) {
	ops := pauseRedisHistory(t, "pause-redis-rwlock.jsonl.gz")
	before := hullsMade.Load()
	res := linearizableReadWrite(context.Background(), ops, pauseRedisOptions.Resolved())
	if res.Verdict != Valid {
		t.Fatalf("%s: %+v", res.Verdict, res.Undecided)
	}
	if hullsMade.Load() == before {
		t.Errorf("valid without a hull: the test no longer exercises the merge")
	}
}

// BenchmarkShapes_PauseRedis decides the pause-redis runs of a read-write
// lock and of a semaphore of 3, with their states merged into hulls and
// without, side by side.
func BenchmarkShapes_PauseRedis(b *testing.B) {
	for _, bc := range []struct {
		name  string
		file  string
		check func(context.Context, []history.Op, Options) Result
	}{
		{"rwlock", "pause-redis-rwlock.jsonl.gz", linearizableReadWrite},
		{"semaphore", "pause-redis-semaphore.jsonl.gz", func(ctx context.Context, ops []history.Op, o Options) Result {
			return linearizablePermits(ctx, ops, o, 3)
		}},
	} {
		ops := pauseRedisHistory(b, bc.file)
		for _, hulls := range []bool{true, false} {
			name := bc.name + "/hulls"
			if !hulls {
				name = bc.name + "/no-hulls"
			}
			b.Run(name, func(b *testing.B) {
				defer func(was bool) { hullMerging = was }(hullMerging)
				hullMerging = hulls
				o := pauseRedisOptions
				o.Timeout = 3 * time.Minute
				for b.Loop() {
					res := bc.check(context.Background(), ops, o.Resolved())
					b.ReportMetric(float64(len(res.UnknownKeys)), "unknown_keys")
				}
			})
		}
	}
}

// BenchmarkReadWrite_ContentionStall checks key lock:0 of the read-write
// lock's contention run at seed 2 (100 clients, 5 keys, TTL 1 s, holds
// up to 20 ms, a 45 ms think; tolerance 50 ms, horizon 1.5 s), which the
// battery left unknown: 3,282 lock ops, 2,053 after the refusals'
// reductions, cut into 10 pieces, of which the fourth is 12 ops of a 40 ms
// stall (7 read grants, 2 read releases, 3 write refusals, every one
// returning within 1.5 ms of the others). The frontier places them in
// every order; what that leaves per set of ops placed is one state for
// each op that could have come last, which no two make a hull of, and
// each next op multiplies them. It is checked with the group hulls and l
// unbounded above (as the checker runs), and with each of the two off;
// each reports whether the key was decided within a minute.
func BenchmarkReadWrite_ContentionStall(b *testing.B) {
	ops := pauseRedisHistory(b, "rw-contention-stall.jsonl.gz")
	o := Options{ClockTolerance: Exactly(50 * time.Millisecond), InfoHorizon: Exactly(1500 * time.Millisecond), Timeout: time.Minute}
	for _, bc := range []struct {
		name          string
		groups, unbnd bool
	}{{"as-run", true, true}, {"no-group-hulls", false, true}, {"last-bounded", true, false}} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(g, u bool) { groupHulls, lastUnbounded = g, u }(groupHulls, lastUnbounded)
			groupHulls, lastUnbounded = bc.groups, bc.unbnd
			for b.Loop() {
				res := linearizableReadWrite(context.Background(), ops, o.Resolved())
				b.ReportMetric(float64(len(res.UnknownKeys)), "unknown_keys")
			}
		})
	}
}
