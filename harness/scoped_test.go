package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// scopedSetNX is setnx whose leases are handed out as scopes: what a
// context-scoped library looks like to lockcheck.
type scopedSetNX struct{ lockimpl.Locker }

func (s scopedSetNX) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	l, err := s.Locker.Acquire(ctx, key, ttl)
	if err == nil {
		l.Watch = lockimpl.NewScope()
	}
	return l, err
}

func (scopedSetNX) Scope() string { return "a scope for the test" }

// TestRun_ScopedLock: a lock whose leases are scopes is judged on mutual
// exclusion only, and says so where the run is recorded (run.json,
// results.json) and again when its dir is checked offline.
func TestRun_ScopedLock(t *testing.T) {
	testutil.RequireRedis(t)
	factory := func(env lockimpl.Env) (lockimpl.Locker, error) {
		l, err := lockimpl.NewSetNX(env)
		return scopedSetNX{l}, err
	}
	res, err := harness.Run(context.Background(), harness.Config{Lock: "scoped", Factory: factory, OutDir: t.TempDir(),
		Workload: workload.Config{Clients: 10, Keys: 2, TTL: time.Second, Hold: 10 * time.Millisecond, Duration: 2 * time.Second, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.json", "results.json"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, f))
		if err != nil || !strings.Contains(string(b), `"not_judged"`) || !strings.Contains(string(b), "a scope for the test") {
			t.Errorf("%s does not say the lease contract was not judged (%v)", f, err)
		}
	}
	offline, _, err := harness.CheckDir(context.Background(), res.Dir, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]checker.Findings{"run": res.Findings, "offline": offline} {
		_, ran := f.Checker("linearizable")
		if ran || f.NotJudged[checker.LeaseContract] != "a scope for the test" || f.Verdict != checker.Valid {
			t.Errorf("%s: linearizable ran %v, not judged %v, verdict %s", name, ran, f.NotJudged, f.Verdict)
		}
	}
}
