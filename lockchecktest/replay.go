package lockchecktest

import (
	"cmp"
	"errors"
	"fmt"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cli"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// ReplayOptions is a plan replayed as a test.
type ReplayOptions struct {
	// Plan is the plan file `lockcheck shrink` wrote (plan.json): its
	// clients, keys, length and fault windows, and the rest of its
	// command line, run with your lock in place of the one it names.
	Plan string
	// Runs is how many times it is run (default 3): a shrunk plan breaks
	// a lock at a measured rate, not every time, and its file says how
	// often (shrunk.reproduced of shrunk.measured).
	Runs int
	// Want is the verdict every run must have (default valid: the lock
	// was fixed). Set it to checker.Invalid to keep a test that the
	// plan still finds the break: it then passes if one run breaks.
	Want checker.Verdict
	// OutDir is the results root, as Options.OutDir.
	OutDir string
}

// Replay runs the plan of opts on the Locker factory builds, opts.Runs
// times, and fails tb unless every run's verdict is opts.Want (Want
// invalid: unless one run breaks), saying how many of the runs broke
// and where their results are. It skips the test without redis-server,
// as Run does.
//
//	func TestMyLock_ShrunkPause(t *testing.T) {
//		lockchecktest.Replay(t, "mylock", mylock.New, lockchecktest.ReplayOptions{Plan: "testdata/plan.json"})
//	}
func Replay(tb testing.TB, name string, factory lockimpl.Factory, opts ReplayOptions) []*harness.Result {
	tb.Helper()
	cfg, err := cli.PlanConfig(opts.Plan, name, factory)
	if err != nil {
		tb.Fatalf("lockchecktest %s: %v", name, err)
		return nil
	}
	requireRedis(tb, cfg.Cluster.RedisServer)
	cfg.OutDir, cfg.Progress, cfg.Cluster.Say = outDir(tb, opts.OutDir), nil, func(string) {}
	want := cmp.Or(opts.Want, checker.Valid)
	ctx, cancel := testContext(tb)
	defer cancel()
	var results []*harness.Result
	broke, wrong := 0, ""
	runs := opts.Runs
	if runs <= 0 {
		runs = 3
	}
	for range runs {
		res, err := harness.Run(ctx, cfg)
		if err != nil {
			if errors.Is(err, harness.ErrConfig) {
				tb.Fatalf("lockchecktest %s: plan %s: %v", name, opts.Plan, err)
			}
			tb.Fatalf("lockchecktest %s: plan %s: harness failed: %v", name, opts.Plan, err)
			return results
		}
		results = append(results, res)
		if res.Verdict == checker.Invalid {
			broke++
		}
		if res.Verdict != checker.Valid && want == checker.Valid && wrong == "" {
			wrong = fmt.Sprintf("verdict %s, want valid; results: %s\n%s", res.Verdict, res.Dir, violations(res.Findings))
		}
	}
	switch {
	case want == checker.Valid && wrong != "":
		tb.Errorf("lockchecktest %s: plan %s: %d of %d runs broke; the first run not valid: %s", name, opts.Plan, broke, len(results), wrong)
	case want == checker.Invalid && broke == 0:
		tb.Errorf("lockchecktest %s: plan %s: 0 of %d runs broke, want one (results: %s)", name, opts.Plan, len(results), results[0].Dir)
	default:
		tb.Logf("lockchecktest %s: plan %s: %d of %d runs broke, as wanted", name, opts.Plan, broke, len(results))
	}
	return results
}
