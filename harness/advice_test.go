package harness_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testutil"
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
