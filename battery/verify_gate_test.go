package battery

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/scenario"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
)

// TestVerify_Gates: which break fails verify, for each kind of scenario
// and --require, and the row status and battery verdict that follow.
func TestVerify_Gates(t *testing.T) {
	client := scenario.Scenario{Name: "overrun"}
	pause := scenario.Scenario{Name: "pause", Pauses: true}
	server := scenario.Scenario{Name: "kill-none", Server: true}
	// downFault: only kill-redis on a single node takes down every node.
	for _, tc := range []struct {
		s    scenario.Scenario
		topo string
		want bool
	}{{scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"kill-redis"}}}, "single", true},
		{scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"kill-redis"}}}, "redlock", false},
		{scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"clock-jump"}}}, "single", false}} {
		if _, got := tc.s.DownFault(tc.topo); got != tc.want {
			t.Errorf("downFault(%v, %s) = %v, want %v", tc.s.Nemesis.Faults, tc.topo, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s                   scenario.Scenario
		require             []string
		wantLease, wantMutx bool
	}{
		{client, nil, true, true},
		{pause, nil, true, false},
		{pause, []string{"fencing"}, true, true},
		{pause, []string{"pause"}, true, true},
		{server, nil, false, false},
		{server, []string{"server"}, true, true},
		{server, []string{"kill-none"}, true, true},
		{server, []string{"failover", "fencing"}, false, false},
	} {
		lease, mutex := tc.s.Gates(tc.require)
		if lease != tc.wantLease || mutex != tc.wantMutx {
			t.Errorf("%s --require %v: gates lease %v mutex %v, want %v %v", tc.s.Name, tc.require, lease, mutex, tc.wantLease, tc.wantMutx)
		}
	}

	findings := func(lin, mutex checker.Verdict) *harness.Result {
		return &harness.Result{Findings: checker.Findings{Checkers: []checker.Result{
			{Name: "linearizable", Verdict: lin}, {Name: "liveness", Verdict: checker.Valid},
			{Name: "mutex", Verdict: mutex, Violations: []checker.Violation{{Message: "double holder"}}}, {Name: "fencing", Verdict: checker.Valid}},
			Coverage: checker.Coverage{checker.StaleHolder: 1}}}
	}
	for _, tc := range []struct {
		name       string
		s          scenario.Scenario
		lin, mutex checker.Verdict
		requires   checker.Coverage
		want       string
	}{
		{"client break", client, checker.Valid, checker.Invalid, nil, report.StatusBroken},
		{"pause mutex", pause, checker.Valid, checker.Invalid, nil, report.StatusFinding},
		{"pause lease", pause, checker.Invalid, checker.Valid, nil, report.StatusBroken},
		{"server", server, checker.Invalid, checker.Invalid, nil, report.StatusFinding},
		{"short", client, checker.Valid, checker.Valid, checker.Coverage{checker.StaleHolder: 2}, report.StatusNotExercised},
		{"met", client, checker.Valid, checker.Valid, checker.Coverage{checker.StaleHolder: 1}, report.StatusPassed},
		{"unknown beats short", client, checker.Unknown, checker.Valid, checker.Coverage{checker.StaleHolder: 2}, report.StatusUnknown},
		// Granted while the only node was down: a break even where the
		// server's findings are not gated.
		{"fail open", server, checker.Valid, checker.Valid, nil, report.StatusBroken},
	} {
		row := report.VerifyRow{Requires: tc.requires, Coverage: checker.Coverage{}}
		if tc.name == "fail open" {
			row.GrantedWhileDown = 3
		}
		row.LeaseGated, row.MutexGated = tc.s.Gates(nil)
		judgeRun(&row, tc.s, findings(tc.lin, tc.mutex))
		if row.Status != tc.want {
			t.Errorf("%s: status %s, want %s", tc.name, row.Status, tc.want)
		}
		if tc.name == "fail open" && !strings.Contains(row.Meaning, "fails open: 3 acquire(s) granted") {
			t.Errorf("fail open: meaning %q", row.Meaning)
		}
	}
	// Short, with most acquires indeterminate: says so, not "raise --budget".
	for _, tc := range []struct {
		acquires, info int64
		why            bool
	}{{410, 400, true}, {410, 200, false}, {10, 10, false}} {
		row := report.VerifyRow{Requires: checker.Coverage{checker.StaleHolder: 2}, Coverage: checker.Coverage{}, Runs: 1}
		res := findings(checker.Valid, checker.Valid)
		res.Summary.Ops = history.Counts{history.Acquire: {history.OK: tc.acquires - tc.info, history.Info: tc.info}}
		judgeRun(&row, client, res)
		if row.Status != report.StatusNotExercised || strings.Contains(row.Meaning, fmt.Sprintf("%d of %d acquires ended indeterminate", tc.info, tc.acquires)) != tc.why {
			t.Errorf("%d of %d acquires indeterminate: %s, %q; want not exercised, the reason given %v", tc.info, tc.acquires, row.Status, row.Meaning, tc.why)
		}
	}
	// --expect: a finding expected is kept; one not expected fails.
	row := report.VerifyRow{Scenario: "pause", Status: report.StatusFinding, Lease: checker.Valid, Mutex: checker.Invalid}
	expectRow(&row, map[string]checker.Verdict{"pause mutex": checker.Invalid})
	if row.Status != report.StatusFinding {
		t.Errorf("expected finding: status %s", row.Status)
	}
	expectRow(&row, map[string]checker.Verdict{"pause mutex": checker.Valid})
	if row.Status != report.StatusBroken || !strings.Contains(row.Meaning, "--expect: mutex valid, got invalid") {
		t.Errorf("unexpected finding: status %s, %q", row.Status, row.Meaning)
	}
	row = report.VerifyRow{Scenario: "pause", Status: report.StatusNotExercised, Lease: checker.Valid}
	if expectRow(&row, map[string]checker.Verdict{"pause lease": checker.Invalid}); row.Status != report.StatusNotExercised {
		t.Errorf("not exercised: status %s, want it kept (a verdict that does not count)", row.Status)
	}
	rows := []report.VerifyRow{{Scenario: "a", Status: report.StatusPassed}, {Scenario: "b", Status: report.StatusNotExercised},
		{Scenario: "c", Status: report.StatusFinding}}
	if v, broken, short := verifyVerdict(rows); v != checker.Unknown || len(broken) != 0 || len(short) != 1 {
		t.Errorf("not exercised: %s %v %v, want unknown", v, broken, short)
	}
	rows = append(rows, report.VerifyRow{Scenario: "d", Status: report.StatusBroken})
	if v, broken, _ := verifyVerdict(rows); v != checker.Invalid || len(broken) != 1 || broken[0] != "d" {
		t.Errorf("broken: %s %v, want invalid [d]", v, broken)
	}
	if v, _, _ := verifyVerdict(rows[:1]); v != checker.Valid {
		t.Errorf("passed only: %s, want valid", v)
	}
}

// TestVerify_RedlockInfoContendedNA: a Redlock records no refusal (its
// failed attempts are undone), so pause-redis, which counts indeterminate
// acquires against refusals, is n/a for it, with why. Nothing runs: the
// rows are decided before (a single-node lock runs them: the survey's and
// TestVerify_* runs of setnx). lost-reply is not: its chance is also
// counted on the wire (the replies the fault dropped), which a Redlock
// meets.
func TestVerify_RedlockInfoContendedNA(t *testing.T) {
	for _, lock := range []string{"redsync", "redlock"} {
		v, _, err := Verify(context.Background(), VerifyConfig{Lock: harness.Config{Lock: lock}, Scenarios: []string{"pause-redis"},
			Seed: 1, OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range v.Rows {
			if r.Status != report.StatusNA || r.NA != scenario.RedlockNoRefusals {
				t.Errorf("%s %s: %s (%q), want n/a: %s", lock, r.Scenario, r.Status, r.NA, scenario.RedlockNoRefusals)
			}
		}
		e, _ := lockimpl.All().Lookup(lock)
		s, _ := scenario.Lookup("lost-reply")
		if topo, na, _ := applies(s, e, VerifyConfig{}, false, ""); na != "" || topo != cluster.Redlock {
			t.Errorf("%s lost-reply: n/a %q on %s, want it to apply on redlock", lock, na, topo)
		}
	}
}

// TestVerifyRun_ProcessPerClient: a --lock-cmd lock runs one process per
// client (ClientFaultLock) where faults pause or crash clients and where
// the master moves, so that each client follows a new master on its own
// as in production; one process for every client elsewhere.
func TestVerifyRun_ProcessPerClient(t *testing.T) {
	shared, per := harness.Config{Lock: "shared"}, harness.Config{Lock: "per-client"}
	cfg := VerifyConfig{Lock: shared, ClientFaultLock: &per}
	for name, want := range map[string]string{"pause": "per-client", "crash": "per-client", "failover": "per-client",
		"partition": "per-client", "partition-detect": "per-client", "overrun": "shared", "contention": "shared", "kill-none": "shared"} {
		s, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := verifyRun(cfg, s, "", scenario.Profile{}, 1, t.TempDir()).Lock; got != want {
			t.Errorf("%s: lock %s, want %s", name, got, want)
		}
	}
}
