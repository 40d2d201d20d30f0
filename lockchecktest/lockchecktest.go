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
package lockchecktest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
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
	if _, err := exec.LookPath(cmp.Or(opts.Cluster.RedisServer, "redis-server")); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_REDIS") != "" {
			tb.Fatalf("lockchecktest: redis-server is required (LOCKCHECK_REQUIRE_REDIS is set): %v", err)
		}
		tb.Skipf("lockchecktest: redis-server not installed (%s)", cluster.InstallHint)
	}
	w := opts.Workload
	if w.Duration == 0 && w.Ops == 0 {
		w.Duration = 5 * time.Second
	}
	if w.Seed == 0 {
		w.Seed = time.Now().UnixNano()
	}
	out := cmp.Or(opts.OutDir, os.Getenv("LOCKCHECK_RESULTS"))
	if out == "" {
		out = tb.TempDir()
	}
	want := opts.Want
	if want == "" {
		want = checker.Valid
	}
	ctx := context.Background()
	if d, ok := deadline(tb); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
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
