// Package faultrun runs a lock under faults until the faults met a live
// lease: the fault tests' helper (nemesis's fault table, harness's runs
// of own locks, agent's runs on agents). A row is a scenario.Scenario,
// run as verify runs one (battery.ScenarioRun). Only external test
// packages may import it: it imports harness and battery.
package faultrun

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/battery"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/ownlock"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// Case is one row of the fault table: a scenario, the type verify and
// matrix run (its Nemesis, RestartDelay, Persistence, Topology,
// ReplicationLag and Failover make the run through battery.ScenarioRun,
// as theirs do; its Requires are the coverage a run must reach to count,
// judged by report.ShortOf, as theirs are), with its whole workload; the
// README's lock x fault table comes from the same settings.
type Case struct {
	scenario.Scenario
	// Workload is the run's whole workload (it shadows the scenario's,
	// an adjustment of verify's base).
	Workload workload.Config
	// Backend runs the nodes as processes ("": cluster.Local) or
	// containers (cluster.Docker).
	Backend string
	// CheckTimeout bounds the linearizability search (0: 2 minutes).
	CheckTimeout time.Duration
}

// On returns the case on another backend.
func (s Case) On(backend string) Case {
	s.Backend = backend
	return s
}

func (s Case) Run(t *testing.T, lock string, seed int64) *harness.Result {
	t.Helper()
	base := harness.Config{Lock: lock, Cluster: cluster.Config{Backend: s.Backend}, Check: checker.Options{Timeout: s.CheckTimeout}}
	cfg := battery.ScenarioRun(s.Scenario, base, s.Topology, s.Workload, seed, "", t.TempDir(), nil)
	ownlock.Resolve(t, &cfg)
	res, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run %s: %v", lock, err)
	}
	testutil.NoRedisChildren(t)
	if s.Backend == cluster.Docker {
		if left := testutil.DockerLeft(t, os.Getpid()); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	return res
}

// Expect runs the case until ok holds in a run that counts (Hit), in at
// most three runs that count (the faults are real and their timing is
// not fully in our hands). A run short of that gave the lock no chance
// to break: it neither passes nor counts; ten runs at most.
func (s Case) Expect(t *testing.T, lock string, ok func(*harness.Result) (bool, string)) *harness.Result {
	t.Helper()
	var res *harness.Result
	counted := 0
	for seed := int64(1); seed <= 10 && counted < 3; seed++ {
		res = s.Run(t, lock, seed)
		good, msg := ok(res)
		t.Logf("%s, attempt %d: verdict %s; %s; coverage %v", lock, seed, res.Verdict, msg, res.Findings.Coverage)
		hit := s.Hit(res)
		if good && hit {
			return res
		}
		if hit {
			counted++
		}
	}
	t.Fatalf("%s: expectation not met in %d runs that count (coverage %v)", lock, counted, res.Findings.Coverage)
	return res
}

// Hit says whether the run counts: short of none of the case's
// Requirements.
func (s Case) Hit(res *harness.Result) bool {
	return len(report.ShortOf(res.Findings.Coverage, s.Requirements())) == 0
}

// Requirements are the scenario's Requires with, for each of its faults
// they do not name, one window begun while a lease was surely live
// (checker.Hit): a row of the fault table counts no run its faults
// missed.
func (s Case) Requirements() checker.Coverage {
	req := checker.Coverage{}
	for _, f := range s.Nemesis.Faults {
		req[checker.Hit(f)] = 1
	}
	for name, n := range s.Requires {
		req[name] = n
	}
	return req
}

// DoubleHolders is how many double holders the run's mutex checker found.
func DoubleHolders(r *harness.Result) int {
	m, _ := r.Findings.Checker("mutex")
	return m.ViolationCount
}

// Invalid expects an invalid verdict.
func Invalid(r *harness.Result) (bool, string) {
	return r.Verdict == checker.Invalid, ""
}

// Valid expects a valid verdict.
func Valid(r *harness.Result) (bool, string) {
	return r.Verdict == checker.Valid, ""
}

// OutlivingRestart is w with leases of 3 s held 1.5 s: a lease live at a
// kill outlives the restart and the clients' return (the go-redis pool
// redials a node that refused it after up to a second), however busy
// the machine, so a holder's release or a client's acquire meets the
// restarted node while the lease it dropped would still hold.
func OutlivingRestart(w workload.Config) workload.Config {
	w.TTL, w.Hold, w.HoldDist, w.Margin, w.Duration = 3*time.Second, 1500*time.Millisecond, workload.HoldFixed, 100*time.Millisecond, 10*time.Second
	return w
}

// ShortLeases is a workload of 200 ms leases under contention.
var ShortLeases = workload.Config{Clients: 50, Keys: 3, Duration: 8 * time.Second, TTL: 200 * time.Millisecond,
	Hold: 100 * time.Millisecond, OpTimeout: 500 * time.Millisecond, Margin: 30 * time.Millisecond}
