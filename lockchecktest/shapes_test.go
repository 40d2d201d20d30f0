package lockchecktest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// semaphoreRace is contention on a semaphore of 3 permits: 20 clients on
// 5 keys (a few acquires of a key in flight, which the model decides in
// a moment even under the race detector), short holds, no retry.
var semaphoreRace = workload.Config{Clients: 20, Keys: 5, Permits: 3, Duration: 2 * time.Second, TTL: time.Second,
	Hold: 10 * time.Millisecond, HoldDist: workload.HoldUniform, Retry: workload.RetryNone}

// TestRun_SemaphoreBothWays: a semaphore is checked from a go test as a
// semaphore (Workload.Permits): the correct one passes, and one that
// counts and then adds in two commands fails the test with the
// semaphore's violation, under the same workload.
func TestRun_SemaphoreBothWays(t *testing.T) {
	reg := lockimpl.All()
	correct, _ := reg.Lookup("semaphore")
	broken, _ := reg.Lookup("broken-semaphore-check-add")
	opts := lockchecktest.Options{Workload: semaphoreRace}

	rec := &recorder{TB: t}
	res := lockchecktest.Run(rec, "semaphore", correct.Factory, opts)
	if len(rec.errs) != 0 || res.Verdict != checker.Valid {
		t.Errorf("correct semaphore: verdict %s, the helper reported %q", res.Verdict, rec.errs)
	}

	rec = &recorder{TB: t}
	res = lockchecktest.Run(rec, "broken-semaphore-check-add", broken.Factory, opts)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "verdict invalid, want valid") || !strings.Contains(rec.errs[0], "semaphore of 3 permits") {
		t.Errorf("broken semaphore: the helper reported %q, want one failure naming the semaphore of 3 permits (results %s)", rec.errs, res.Dir)
	}
}

// TestRun_RWLockBothWays: a read-write lock is checked from a go test as
// one (Workload.Readers), here written as a Lua spec: examples/specs/
// rwlock.toml passes with half its acquires reads, and its variant whose
// readers ignore the writer fails the test with the read-write lock's
// violation, under the same workload.
func TestRun_RWLockBothWays(t *testing.T) {
	w := semaphoreRace
	w.Permits, w.Readers = 0, 0.5
	for _, tc := range []struct {
		file string
		want checker.Verdict
	}{{"rwlock.toml", checker.Valid}, {"broken-rwlock-readers-ignore-writer.toml", checker.Invalid}} {
		s, err := lockimpl.LoadSpec("../examples/specs/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{TB: t}
		res := lockchecktest.Run(rec, s.Name, s.Factory, lockchecktest.Options{Workload: w})
		switch {
		case tc.want == checker.Valid && (len(rec.errs) != 0 || res.Verdict != checker.Valid):
			t.Errorf("%s: verdict %s, the helper reported %q", tc.file, res.Verdict, rec.errs)
		case tc.want == checker.Invalid && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "verdict invalid, want valid")):
			t.Errorf("%s: the helper reported %q, want one failure with the verdict (results %s)", tc.file, rec.errs, res.Dir)
		}
	}
}

// fatalRecorder stands in for the user's *testing.T to see what Verify
// reports when it stops the test: its Fatalf ends only the goroutine the
// helper runs on (verifyIn).
type fatalRecorder struct {
	recorder
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestVerify_ShapeOptions: VerifyOptions.Permits and Readers reach every
// scenario's workload: a mutex verified as a semaphore of 3 permits, or
// with readers, stops the test before any run with the line naming the
// shape it lacks (the battery's own tests judge each shape's scenarios).
func TestVerify_ShapeOptions(t *testing.T) {
	setnx, _ := lockimpl.All().Lookup("setnx")
	for _, tc := range []struct {
		opts lockchecktest.VerifyOptions
		want string
	}{
		{lockchecktest.VerifyOptions{Permits: 3}, "has 1 permits a key, not --permits 3"},
		{lockchecktest.VerifyOptions{Readers: 0.5}, "is not a read-write lock: --readers 0.5"},
	} {
		tc.opts.Scenarios, tc.opts.Budget = []string{"contention"}, time.Minute
		rec := &fatalRecorder{recorder: recorder{TB: t}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			lockchecktest.Verify(rec, "setnx", setnx.Factory, tc.opts)
		}()
		<-done
		if !strings.Contains(rec.fatal, tc.want) {
			t.Errorf("setnx verified with %+v: the helper stopped with %q, want %q", tc.opts, rec.fatal, tc.want)
		}
	}
}

// TestRun_SpecReentrantAndWaitBothWays: a reentrant lock and a blocking
// one written as Lua specs are checked from a go test as such: examples/
// specs/reentrant-hash.toml passes with holders re-entering to depth 3,
// and its variant whose release deletes the key fails the test; setnx-
// block.toml's waiters ([wait], polling every 25 ms) pass with --wait, and
// broken-wait-slow-poll.toml's, polling every 1 s under a declared bound
// of 250 ms, fail it with a starved waiter (two clients on one key: each
// release leaves the key free for the rest of the other's poll, past
// 250 ms three times in four, while the holder thinks for 500 ms).
func TestRun_SpecReentrantAndWaitBothWays(t *testing.T) {
	reenter := workload.Config{Clients: 10, Keys: 2, Reenter: 3, Duration: 3 * time.Second, TTL: time.Second,
		Hold: 100 * time.Millisecond, HoldDist: workload.HoldUniform, Think: 20 * time.Millisecond, Retry: workload.RetryNone}
	wait := workload.Config{Clients: 2, Keys: 1, Wait: 3 * time.Second, Duration: 6 * time.Second, TTL: time.Second,
		Hold: 300 * time.Millisecond, HoldDist: workload.HoldUniform, Think: 500 * time.Millisecond, Retry: workload.RetryNone}
	for _, tc := range []struct {
		file string
		w    workload.Config
		want checker.Verdict
	}{
		{"reentrant-hash.toml", reenter, checker.Valid}, {"broken-reentrant-release-deletes.toml", reenter, checker.Invalid},
		{"setnx-block.toml", wait, checker.Valid}, {"broken-wait-slow-poll.toml", wait, checker.Invalid},
	} {
		s, err := lockimpl.LoadSpec("../examples/specs/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{TB: t}
		res := lockchecktest.Run(rec, s.Name, s.Factory, lockchecktest.Options{Workload: tc.w})
		switch {
		case tc.want == checker.Valid && (len(rec.errs) != 0 || res.Verdict != checker.Valid):
			t.Errorf("%s: verdict %s, the helper reported %q", tc.file, res.Verdict, rec.errs)
		case tc.want == checker.Invalid && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "verdict invalid, want valid")):
			t.Errorf("%s: the helper reported %q, want one failure with the verdict (results %s)", tc.file, rec.errs, res.Dir)
		}
	}
}
