package battery_test

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
)

// TestRealBugs: published bugs of Redis lock libraries, each reproduced
// by its mechanism in a lock of lockcheck's own, is caught by the verify
// scenario that gives it its chance, and its fixed counterpart passes the
// same scenario (README, "Real bugs, caught"; go-redis #2985 is
// TestVerify_Stalls's broken-resend, and the break of redis-semaphore
// #175 is TestVerify_FreeKeyBugNeedsCoverage's).
func TestRealBugs(t *testing.T) {
	testutil.RequireRedis(t)
	t.Run("redis-semaphore-175", func(t *testing.T) {
		// A refresh that finds the lease expired takes the key again
		// (SET NX) instead of reporting it lost: broken at extend in
		// TestVerify_FreeKeyBugNeedsCoverage; its fix passes extend.
		fixed, _ := verify(t, "spec:setnx", []string{"extend"}, time.Minute, nil)
		if r := row(t, fixed, "extend"); fixed.Verdict != checker.Valid || r.Status != report.StatusPassed {
			t.Errorf("the fix: verdict %s, extend %s in %d runs (%s); want valid, passed", fixed.Verdict, r.Status, r.Runs, r.CoverageText())
		}
	})
	t.Run("redisson-3194", func(t *testing.T) {
		// The watchdog stops renewing (after a reconnect, a renewal
		// that failed) and the holder never learns it: it works on past
		// its lease, beside the next holder. Its fix ends the section at
		// the lease's deadline when renewals fail.
		broken, _ := verify(t, "broken-watchdog-swallow", []string{"cut-off"}, time.Minute, nil)
		fixed, _ := verify(t, "watchdog", []string{"cut-off"}, time.Minute, nil)
		if r := row(t, broken, "cut-off"); broken.Verdict != checker.Invalid || r.Status != report.StatusBroken || r.Mutex != checker.Invalid {
			t.Errorf("the bug: verdict %s, cut-off %s (mutex %s); want invalid, broken, mutex invalid", broken.Verdict, r.Status, r.Mutex)
		}
		if r := row(t, fixed, "cut-off"); fixed.Verdict != checker.Valid || r.Status != report.StatusPassed {
			t.Errorf("the fix: verdict %s, cut-off %s in %d runs (%s); want valid, passed", fixed.Verdict, r.Status, r.Runs, r.CoverageText())
		}
	})
	t.Run("redis-py-416", func(t *testing.T) {
		// One Lock object shared by every thread (thread_local=False):
		// a holder whose lease expired releases the next holder's.
		testutil.RedisPy(t)
		const py = "../examples/adapters/redispy/lock.py"
		broken := verifyProcess(t, "redispy-shared", py+" --shared", false, []string{"overrun"})
		fixed := verifyProcess(t, "redispy", py, false, []string{"overrun"})
		expectBreak(t, broken, fixed, "overrun")
	})
}

// expectBreak asserts that broken broke the lease contract at scenario
// and that fixed passed it.
func expectBreak(t *testing.T, broken, fixed *report.Verify, scenario string) {
	t.Helper()
	if r := row(t, broken, scenario); broken.Verdict != checker.Invalid || r.Status != report.StatusBroken || r.Lease != checker.Invalid {
		t.Errorf("the bug: verdict %s, %s %s (lease %s); want invalid, broken, lease invalid", broken.Verdict, scenario, r.Status, r.Lease)
	}
	if r := row(t, fixed, scenario); fixed.Verdict != checker.Valid || r.Status != report.StatusPassed {
		t.Errorf("the fix: verdict %s, %s %s in %d runs (%s); want valid, passed", fixed.Verdict, scenario, r.Status, r.Runs, r.CoverageText())
	}
}
