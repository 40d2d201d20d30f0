package battery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
)

// wholeSeconds is setnx whose keys live whole seconds, as locks whose TTL
// is in seconds do (go-zero, Laravel, malkusch/lock): asked for 100 ms,
// it sets a 1 s key, and says so (KeyTTL) so that the history records
// what Redis was told.
type wholeSeconds struct{ lockimpl.Locker }

func (w wholeSeconds) KeyTTL(ttl time.Duration) time.Duration {
	return (ttl + time.Second - 1) / time.Second * time.Second
}

func (w wholeSeconds) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	return w.Locker.Acquire(ctx, key, w.KeyTTL(ttl))
}

// TestVerify_SizedToTheLock: a lock whose keys live whole seconds meets
// overrun's holds of 0 to 200 ms under its 1 s keys, never past them;
// verify sizes the scenario to the keys its first run shows (×10) and
// the lock is exercised and passes, where it was short for ever.
func TestVerify_SizedToTheLock(t *testing.T) {
	testutil.RequireRedis(t)
	whole := func(env lockimpl.Env) (lockimpl.Locker, error) {
		l, err := lockimpl.NewSetNX(env)
		return wholeSeconds{l}, err
	}
	v, _, err := Verify(context.Background(), VerifyConfig{Lock: harness.Config{Lock: "whole-seconds", Factory: whole},
		Scenarios: []string{"overrun"}, Budget: 90 * time.Second, Seed: 1, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := v.Rows[0]
	t.Logf("%s: %s lease %s, %s, ×%d in %d runs: %s", r.Scenario, r.Status, r.Lease, r.CoverageText(), r.Scale, r.Runs, r.Description)
	if r.Status != report.StatusPassed || r.Scale != 10 || !strings.Contains(r.Description, "sized to the lock") {
		t.Errorf("overrun: %s, ×%d; want passed, sized ×10", r.Status, r.Scale)
	}
}
