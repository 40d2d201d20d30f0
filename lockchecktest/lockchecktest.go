// Package lockchecktest runs lockcheck on your own Go lock from your own
// go test: it starts Redis, drives the workload (and faults) through the
// Locker your factory builds, checks the history and fails the test with
// the verdict, the first violations and the results path.
//
//	func TestMyLock(t *testing.T) {
//		lockchecktest.Run(t, "mylock", mylock.New, lockchecktest.Options{
//			Workload: workload.Config{Clients: 50, Keys: 3, TTL: 200 * time.Millisecond, Duration: 5 * time.Second},
//		})
//	}
//
// A factory gets a lockimpl.Env (Redis addresses, password, op timeout)
// and returns a lockimpl.Locker; see examples/gotest.
//
// A lock that is not a mutex is checked as its shape: a semaphore
// (lockimpl.Permitter, built with Env.Permits) with Workload.Permits or
// VerifyOptions.Permits set to its k, a read-write lock
// (lockimpl.ReadWriter) with Workload.Readers or VerifyOptions.Readers
// the share of its acquires that read, each judged by its shape's model.
//
// Replay runs a plan file (lockcheck shrink's plan.json) with your lock:
// the regression test to keep once the break it found is fixed.
package lockchecktest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/battery"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// Options is one run. Zero fields take lockcheck's defaults, except the
// duration, which is 5 s here.
type Options struct {
	Workload workload.Config
	// Faults is the nemesis schedule; empty: none.
	Nemesis nemesis.Config
	Cluster cluster.Config
	Check   checker.Options
	// Want is the verdict the test expects (default valid). Set it to
	// checker.Invalid to prove that a fault breaks a lock.
	Want checker.Verdict
	// OutDir is the results root (default: $LOCKCHECK_RESULTS, else
	// "lockcheck-results" under the test's temp dir, kept only while the
	// test runs).
	OutDir string
	// Version names the lock's version in run.json.
	Version string
}

// Run runs lockcheck on the Locker that factory builds, and fails tb
// unless the verdict is opts.Want. It skips the test if redis-server is not
// installed (fails it instead when LOCKCHECK_REQUIRE_REDIS is set).
func Run(tb testing.TB, name string, factory lockimpl.Factory, opts Options) *harness.Result {
	tb.Helper()
	requireRedis(tb, opts.Cluster.RedisServer)
	w := opts.Workload
	if w.Duration == 0 && w.Ops == 0 {
		w.Duration = 5 * time.Second
	}
	if w.Seed == 0 {
		w.Seed = time.Now().UnixNano()
	}
	out := outDir(tb, opts.OutDir)
	want := cmp.Or(opts.Want, checker.Valid)
	ctx, cancel := testContext(tb)
	defer cancel()
	res, err := harness.Run(ctx, harness.Config{Name: name, Lock: name, Factory: factory, LockVersion: opts.Version,
		OutDir: out, Workload: w, Nemesis: opts.Nemesis, Cluster: opts.Cluster, Check: opts.Check,
		Args: []string{"lockchecktest.Run", tb.Name(), fmt.Sprintf("seed=%d", w.Seed)}})
	if err != nil {
		dir := ""
		if res != nil {
			dir = " (results: " + res.Dir + ")"
		}
		if errors.Is(err, harness.ErrConfig) {
			tb.Fatalf("lockchecktest %s: %v%s", name, err, dir)
		}
		tb.Fatalf("lockchecktest %s: harness failed: %v%s", name, err, dir)
	}
	if res.Verdict != want {
		tb.Errorf("lockchecktest %s: verdict %s, want %s (seed %d); results: %s\n%s",
			name, res.Verdict, want, w.Seed, res.Dir, violations(res.Findings))
	} else {
		tb.Logf("lockchecktest %s: %s as wanted, %d ops (seed %d); results: %s", name, res.Verdict, res.Ops, w.Seed, res.Dir)
	}
	return res
}

// requireRedis skips tb without redis-server (fails it when
// LOCKCHECK_REQUIRE_REDIS is set).
func requireRedis(tb testing.TB, server string) {
	tb.Helper()
	if _, err := exec.LookPath(cmp.Or(server, "redis-server")); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_REDIS") != "" {
			tb.Fatalf("lockchecktest: redis-server is required (LOCKCHECK_REQUIRE_REDIS is set): %v", err)
		}
		tb.Skipf("lockchecktest: redis-server not installed (%s)", cluster.InstallHint)
	}
}

// outDir is the results root: dir, else $LOCKCHECK_RESULTS, else the
// test's temp dir.
func outDir(tb testing.TB, dir string) string {
	if out := cmp.Or(dir, os.Getenv("LOCKCHECK_RESULTS")); out != "" {
		return out
	}
	return tb.TempDir()
}

// testContext ends before the test binary's -timeout, leaving time for
// the report.
func testContext(tb testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := deadline(tb); ok {
		return context.WithDeadline(context.Background(), d)
	}
	return context.WithCancel(context.Background())
}

// VerifyOptions is one lockcheck verify of a Go lock.
type VerifyOptions struct {
	// Scenarios picks scenarios by name (default: the whole battery;
	// harness.VerifyScenarios lists them).
	Scenarios []string
	// Budget bounds the battery's time (default battery.DefaultVerifyBudget).
	Budget time.Duration
	// Require turns findings into gates: "fencing", "server" or scenario
	// names.
	Require []string
	// Watchdog: the lock extends its leases on its own (verify's extend
	// scenario then adds no client-side extends).
	Watchdog bool
	// Permits verifies a semaphore of this many permits a key (0 or 1:
	// a mutex), as lockcheck verify --permits does.
	Permits int
	// Readers verifies a read-write lock, this share of its acquires
	// reads (0: a mutex), as lockcheck verify --readers does.
	Readers float64
	// Workload, if set, adjusts every scenario's workload last (the
	// clients of a semaphore's contention, say).
	Workload func(*workload.Config)
	Cluster  cluster.Config
	// Want is the verdict the test expects (default valid).
	Want    checker.Verdict
	OutDir  string
	Version string
	Seed    int64
}

// Verify runs lockcheck verify's battery on the Locker that factory
// builds, and fails tb unless the verdict is opts.Want, naming the
// scenarios that broke or were not exercised and verify.md's path.
func Verify(tb testing.TB, name string, factory lockimpl.Factory, opts VerifyOptions) *report.Verify {
	tb.Helper()
	requireRedis(tb, opts.Cluster.RedisServer)
	ctx, cancel := testContext(tb)
	defer cancel()
	want := cmp.Or(opts.Want, checker.Valid)
	v, dir, err := battery.Verify(ctx, battery.VerifyConfig{
		Lock:     harness.Config{Lock: name, Factory: factory, LockVersion: opts.Version, Cluster: opts.Cluster},
		Watchdog: opts.Watchdog, Scenarios: opts.Scenarios, Budget: opts.Budget, Require: opts.Require, Seed: opts.Seed,
		Workload: opts.adjust(), OutDir: outDir(tb, opts.OutDir), Args: []string{"lockchecktest.Verify", tb.Name()}})
	if err != nil {
		tb.Fatalf("lockchecktest.Verify %s: %v (results: %s)", name, err, dir)
	}
	md := filepath.Join(dir, "verify.md")
	if v.Verdict != want {
		var b strings.Builder
		for _, r := range v.Rows {
			if r.Status == report.StatusBroken || r.Status == report.StatusNotExercised || r.Status == report.StatusUnknown {
				fmt.Fprintf(&b, "  %s: %s %s%s\n", r.Scenario, r.Status, r.Meaning, strings.Join(r.Short, ", "))
			}
		}
		tb.Errorf("lockchecktest.Verify %s: verdict %s, want %s; results: %s\n%s", name, v.Verdict, want, md, b.String())
	} else {
		tb.Logf("lockchecktest.Verify %s: %s as wanted in %s; results: %s", name, v.Verdict, v.Elapsed, md)
	}
	return v
}

// adjust is what opts changes in every scenario's workload: its
// permits and readers, then its own Workload.
func (opts VerifyOptions) adjust() func(*workload.Config) {
	if opts.Permits == 0 && opts.Readers == 0 && opts.Workload == nil {
		return nil
	}
	return func(w *workload.Config) {
		w.Permits, w.Readers = cmp.Or(opts.Permits, w.Permits), cmp.Or(opts.Readers, w.Readers)
		if opts.Workload != nil {
			opts.Workload(w)
		}
	}
}

// violations lists each checker's verdict and its first violations.
func violations(rep checker.Findings) string {
	var b strings.Builder
	for _, r := range rep.Checkers {
		fmt.Fprintf(&b, "  %s: %s", r.Name, r.Verdict)
		if r.ViolationCount > 0 {
			fmt.Fprintf(&b, ", %d violation(s)", r.ViolationCount)
		}
		b.WriteByte('\n')
		for i, v := range r.Violations {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "    %s\n", firstLine(v.Message))
		}
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// deadline is the test binary's -timeout, less a margin for the report.
func deadline(tb testing.TB) (time.Time, bool) {
	t, ok := tb.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return time.Time{}, false
	}
	d, ok := t.Deadline()
	return d.Add(-30 * time.Second), ok
}
