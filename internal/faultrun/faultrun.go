// Package faultrun runs a lock under faults until the faults met a live
// lease: the fault tests' helper (nemesis's fault table, harness's and
// battery's runs of own locks). Only external test packages may import
// it: it imports harness.
package faultrun

import (
	"cmp"
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/ownlock"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Case is one fault run; the README's lock x fault table comes from the
// same settings.
type Case struct {
	Workload     workload.Config
	Nemesis      nemesis.Config
	Cluster      cluster.Config
	RestartDelay time.Duration
	// CheckTimeout bounds the linearizability search (0: 2 minutes).
	CheckTimeout time.Duration
	// Needs are coverage figures a run must reach, besides each fault's
	// hit, to count: what gives the bug its chance, as verify's Requires.
	Needs checker.Coverage
}

// On returns the case on another backend.
func (s Case) On(backend string) Case {
	s.Cluster.Backend = backend
	return s
}

func (s Case) Run(t *testing.T, lock string, seed int64) *harness.Result {
	t.Helper()
	w := s.Workload
	w.Seed = seed
	cfg := harness.Config{Lock: lock, OutDir: t.TempDir(), Workload: w,
		Nemesis: s.Nemesis, Cluster: s.Cluster, RestartDelay: s.RestartDelay,
		Check: checker.Options{Timeout: cmp.Or(s.CheckTimeout, 2*time.Minute), ClockTolerance: 50 * time.Millisecond}}
	ownlock.Resolve(t, &cfg)
	res, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run %s: %v", lock, err)
	}
	testutil.NoRedisChildren(t)
	if s.Cluster.Backend == cluster.Docker {
		if left := testutil.DockerLeft(t, os.Getpid()); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	return res
}

// Expect runs the case until ok holds in a run whose faults each began
// at least once while a lease was surely live (coverage hit:F), and that
// met s.Needs, in at most three runs that count (the faults are real and
// their timing is not fully in our hands). A run short of that gave the
// lock no chance to break: it neither passes nor counts; ten runs at most.
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

// Hit says whether each of the scenario's faults began at least once
// while a lease was surely live, and the run met s.Needs.
func (s Case) Hit(res *harness.Result) bool {
	return testutil.Hit(res.Findings.Coverage, s.Nemesis.Faults, s.Needs)
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
