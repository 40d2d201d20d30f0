package lockchecktest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// recorder stands in for the user's *testing.T to see what Run reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// lateReleases makes holders overrun their TTL and release late: what
// exposes a release that does not check ownership.
var lateReleases = workload.Config{Clients: 200, Keys: 5, Duration: 4 * time.Second, TTL: 100 * time.Millisecond,
	Hold: 100 * time.Millisecond, HoldDist: workload.HoldUniform, Retry: workload.RetryNone, Margin: 30 * time.Millisecond}

// TestRun_BothWays: the helper fails the test for a broken lock, with the
// verdict and the results path, and passes the correct one under the same
// workload.
func TestRun_BothWays(t *testing.T) {
	reg := lockimpl.All()
	broken, _ := reg.Lookup("broken-del-release")
	correct, _ := reg.Lookup("setnx")
	opts := lockchecktest.Options{Workload: lateReleases, Check: checker.Options{ClockTolerance: 50 * time.Millisecond}}

	rec := &recorder{TB: t}
	res := lockchecktest.Run(rec, "broken-del-release", broken.Factory, opts)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "verdict invalid, want valid") || !strings.Contains(rec.errs[0], res.Dir) ||
		!strings.Contains(rec.errs[0], "mutex: invalid") {
		t.Errorf("broken lock: the helper reported %q, want one failure with the verdict, the mutex violations and %s", rec.errs, res.Dir)
	}

	rec = &recorder{TB: t}
	lockchecktest.Run(rec, "setnx", correct.Factory, opts)
	if len(rec.errs) != 0 {
		t.Errorf("correct lock: the helper failed the test: %q", rec.errs)
	}

	rec = &recorder{TB: t}
	opts.Want = checker.Invalid
	lockchecktest.Run(rec, "broken-del-release", broken.Factory, opts)
	if len(rec.errs) != 0 {
		t.Errorf("Want invalid, broken lock: the helper failed the test: %q", rec.errs)
	}
}

// TestVerify_BothWays: Verify fails the test for a broken lock, naming the
// scenario that broke it and verify.md, and passes the correct one under
// the same scenarios.
func TestVerify_BothWays(t *testing.T) {
	reg := lockimpl.All()
	broken, _ := reg.Lookup("broken-del-release")
	correct, _ := reg.Lookup("setnx")
	opts := lockchecktest.VerifyOptions{Scenarios: []string{"overrun", "crash"}, Budget: time.Minute, Seed: 1}

	rec := &recorder{TB: t}
	v := lockchecktest.Verify(rec, "broken-del-release", broken.Factory, opts)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "verdict invalid, want valid") || !strings.Contains(rec.errs[0], "overrun: broken") ||
		!strings.Contains(rec.errs[0], "verify.md") {
		t.Errorf("broken lock: the helper reported %q, want one failure naming overrun and verify.md", rec.errs)
	}
	if v.Verdict != checker.Invalid {
		t.Errorf("broken lock: verdict %s", v.Verdict)
	}

	rec = &recorder{TB: t}
	if v := lockchecktest.Verify(rec, "setnx", correct.Factory, opts); len(rec.errs) != 0 || v.Verdict != checker.Valid {
		t.Errorf("correct lock: verdict %s, the helper reported %q", v.Verdict, rec.errs)
	}
}

func TestMain(m *testing.M) {
	testutil.QuietRedis()
	os.Exit(m.Run())
}
