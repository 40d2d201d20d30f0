package battery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
)

// TestWaitsOut: a stall scenario short of its indeterminate acquires is
// n/a, with the measured reason, only where its stalls met enough
// acquires and none ended indeterminate; any indeterminate acquire, or
// too few acquires, or another figure short, or a fault other than a
// stall (lost-reply: a client that resends is answered), leaves it not
// exercised.
func TestWaitsOut(t *testing.T) {
	for _, c := range []struct {
		name     string
		req, cov checker.Coverage
		fault    string
		na       bool
	}{
		{"waited out", checker.Coverage{checker.InfoContended: 20, checker.Hit("pause-redis"): 2}, checker.Coverage{checker.Hit("pause-redis"): 9, checker.WindowAcquires: 412}, "pause-redis", true},
		{"one indeterminate", checker.Coverage{checker.InfoContended: 20}, checker.Coverage{checker.WindowAcquires: 412, checker.WindowInfo: 1}, "pause-redis", false},
		{"too few acquires", checker.Coverage{checker.InfoSettled: 2}, checker.Coverage{checker.WindowAcquires: 5}, "pause-redis", false},
		{"lost replies resent", checker.Coverage{checker.AnyOf(checker.InfoContended, history.LostReply): 10}, checker.Coverage{checker.WindowAcquires: 1048}, "lost-reply", false},
		{"another figure short", checker.Coverage{checker.InfoContended: 20, checker.Hit("pause-redis"): 2}, checker.Coverage{checker.Hit("pause-redis"): 1, checker.WindowAcquires: 412}, "pause-redis", false},
	} {
		row := report.VerifyRow{Requires: c.req, Coverage: c.cov, Runs: 3}
		why := scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{c.fault}}}.WaitsOut(row.Requires, row.Coverage, row.Runs)
		if (why != "") != c.na || c.na && !strings.Contains(why, "0 of 412 acquires") {
			t.Errorf("%s: %q, want n/a %v", c.name, why, c.na)
		}
	}
}

// TestVerify_ClientOutlastsStall: a correct lock whose Redis client
// waits 3 s for a reply (a socket timeout longer than pause-redis's 1 s
// stall, as applications set) never ends an acquire indeterminate: its
// pause-redis is n/a with the measured reason, its lease contract valid,
// not "not exercised" (which no budget could mend).
func TestVerify_ClientOutlastsStall(t *testing.T) {
	testutil.RequireRedis(t)
	patient := func(env lockimpl.Env) (lockimpl.Locker, error) {
		env.OpTimeout = 3 * time.Second
		return lockimpl.NewSetNX(env)
	}
	v, _, err := Verify(context.Background(), VerifyConfig{Lock: harness.Config{Lock: "patient-setnx", Factory: patient},
		Scenarios: []string{"pause-redis"}, Budget: 40 * time.Second, Seed: 1, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := v.Rows[0]
	t.Logf("%s: %s lease %s, %s, %s; %d acquires in its windows, %d indeterminate", r.Scenario, r.Status, r.Lease, r.CoverageText(), r.NA, r.Coverage[checker.WindowAcquires], r.Coverage[checker.WindowInfo])
	if r.Status != report.StatusNA || !strings.Contains(r.NA, "ended indeterminate") || r.Lease != checker.Valid || r.Coverage[checker.WindowAcquires] < scenario.MinWindowAcquires {
		t.Errorf("pause-redis: %s, lease %s, %q; want n/a with its measure, lease valid", r.Status, r.Lease, r.NA)
	}
	if v.Verdict == checker.Unknown {
		t.Errorf("verdict unknown (%v): a scenario the lock cannot meet is n/a, not short", v.Short)
	}
}
