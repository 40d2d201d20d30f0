package harness_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/battery"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// skipWorkload: 20 clients on 3 keys, holds of about 50 ms under a 300 ms
// TTL, a fifth of them ending without a release.
var skipWorkload = workload.Config{Clients: 20, Keys: 3, Duration: 5 * time.Second, TTL: 300 * time.Millisecond,
	Hold: 50 * time.Millisecond, HoldDist: workload.HoldUniform, Retry: "fixed:10ms", SkipRelease: 0.2, Margin: 30 * time.Millisecond}

// TestRun_SkipRelease: a correct lock heals a forgotten unlock by its
// TTL: valid, with the stall after each abandoned lease at most the TTL
// (plus the clock tolerance); a lock without a TTL never heals: stuck.
func TestRun_SkipRelease(t *testing.T) {
	testutil.RequireRedis(t)
	res := run(t, "setnx", skipWorkload)
	l, _ := res.Findings.Checker("liveness")
	t.Logf("setnx: verdict %s, skipped %d, liveness %v", res.Verdict, res.Summary.Skipped, l.Figures)
	if res.Verdict != checker.Valid {
		t.Errorf("setnx with skipped releases: %s, want valid (the TTL heals them): %+v", res.Verdict, res.Findings.Checkers)
	}
	if res.Summary.Skipped < 10 || l.Figures["abandoned_leases"] < res.Summary.Skipped {
		t.Errorf("skipped %d, abandoned leases %d: want at least 10, each seen in the history", res.Summary.Skipped, l.Figures["abandoned_leases"])
	}
	stall := time.Duration(l.Figures["longest_abandoned_stall_ms"]) * time.Millisecond
	if stall < skipWorkload.TTL/2 || stall > skipWorkload.TTL+50*time.Millisecond {
		t.Errorf("longest stall after a skipped release %v: want up to the %v TTL, and most of it", stall, skipWorkload.TTL)
	}
	rf, err := report.ReadResults(res.Dir)
	if err != nil || rf.Summary.Skipped != res.Summary.Skipped {
		t.Errorf("results.json skipped_releases %d, %v; want %d", rf.Summary.Skipped, err, res.Summary.Skipped)
	}

	res = run(t, "broken-no-ttl", skipWorkload)
	l, _ = res.Findings.Checker("liveness")
	if l.Verdict != checker.Invalid || l.Figures["stuck_acquires"] == 0 {
		t.Errorf("broken-no-ttl with skipped releases: liveness %s (%v), want a stuck lock", l.Verdict, l.Figures)
	}
}

// TestRun_ShortTTL is the classic too-short TTL: a correct lock whose
// work (200 ms) outlives its 100 ms lease stays valid (clients leave at
// the deadline), and the TTL advice says so: every hold over the TTL,
// nearly every section cut short, and no rule the TTL fits.
func TestRun_ShortTTL(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 10, Keys: 10, Duration: 3 * time.Second, TTL: 100 * time.Millisecond, Hold: 200 * time.Millisecond,
		HoldDist: workload.HoldFixed, Retry: workload.RetryNone, Margin: 20 * time.Millisecond, TTLFactor: 10}
	res := run(t, "setnx", w)
	rf, err := report.ReadResults(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rf.TTLAdvice
	t.Logf("verdict %s; advice %+v", res.Verdict, a)
	if res.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid: the clients leave at their deadline", res.Verdict)
	}
	// The run's end may cut one hold a client short, under the TTL.
	if a.Holds == 0 || a.HoldsOverTTL < a.Holds-int64(w.Clients) || a.CutShortFraction < 0.9 || a.HoldP99ms < 190 || a.TTLms != 100 {
		t.Errorf("ttl_advice %+v: want every hold over the 100 ms TTL (but one a client the end cut) and nearly every section cut short", a)
	}
	if len(a.Rules) != 2 || a.Rules[0].Fits || a.Rules[1].Fits || a.Rules[1].TTLms < 1900 || !strings.Contains(a.Rules[1].Rule, "× 10") {
		t.Errorf("rules %+v: want 3 × p99 and p99 × 10 (about 2 s), neither fitting", a.Rules)
	}
}

// TestFault_FailOpen: broken-fail-open takes Redis's errors for a yes:
// while the only node is down, every client holds the lock (acquires
// granted during the outage, double holders); with no fault it behaves.
func TestFault_FailOpen(t *testing.T) {
	testutil.RequireRedis(t)
	s := faultrun.Case{Workload: faultrun.ShortLeases, Nemesis: nemesis.Config{Faults: []string{"kill-redis"}, Interval: 2 * time.Second},
		RestartDelay: 500 * time.Millisecond}
	s.Expect(t, "broken-fail-open", func(r *harness.Result) (bool, string) {
		ops, err := history.ReadFile(filepath.Join(r.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		n := len(checker.GrantedWhileDown(ops, "kill-redis"))
		return r.Verdict == checker.Invalid && faultrun.DoubleHolders(r) > 0 && n > 0, "granted while down: " + strconv.Itoa(n)
	})
	s.Nemesis.Faults = nil
	s.Expect(t, "broken-fail-open", faultrun.Valid)
}

// TestBench_RetrySweep: three retry policies side by side in one sweep:
// a cell each, named by its policy, with the figures that tell them apart.
func TestBench_RetrySweep(t *testing.T) {
	testutil.RequireRedis(t)
	cells, _, err := battery.Bench(context.Background(), battery.BenchConfig{
		Locks: []string{"setnx"}, Clients: []int{50}, Keys: []int{2}, Retries: []string{"none", "fixed:5ms", "backoff:5ms,100ms,4"},
		Workload: workload.Config{Duration: 2 * time.Second, TTL: time.Second, Hold: 5 * time.Millisecond, HoldDist: workload.HoldFixed},
		Warmup:   300 * time.Millisecond, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.NoRedisChildren(t)
	if len(cells) != 3 {
		t.Fatalf("%d cells, want 3", len(cells))
	}
	for i, want := range []string{"none", "fixed:5ms", "backoff:5ms,100ms,4"} {
		c := cells[i]
		t.Logf("%s: %.0f acq/s, wait p99 %.1f ms, %.2f attempts/acq, %d give-ups, jain %.3f", c.Retry, c.Acquisitions, c.WaitP99, c.AttemptsPerAcquisition, c.GiveUps, c.Jain)
		if c.Retry != want || c.Verdict != checker.Valid || c.Acquisitions <= 0 || c.AttemptsPerAcquisition < 1 {
			t.Errorf("cell %d: %+v, want retry %s, valid, with acquisitions", i, c, want)
		}
	}
	// 50 clients on 2 keys: a client with one attempt gives up often, one
	// that retries until it acquires never does.
	if cells[0].GiveUps == 0 || cells[1].GiveUps != 0 {
		t.Errorf("give-ups: none %d (want some), fixed:5ms %d (want none)", cells[0].GiveUps, cells[1].GiveUps)
	}
}
