package battery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
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

// TestSizeToLock_SlowAcquires: a run whose acquires took about the TTL
// (a median of 130 ms under 100 ms) holds no lease surely, and overrun
// is sized by their latency (×6: a TTL four times the median), saying
// so; a run of fast acquires on keys of the TTL asked is kept as it is.
func TestSizeToLock_SlowAcquires(t *testing.T) {
	s, _ := scenario.Lookup("overrun")
	for _, c := range []struct {
		took      time.Duration
		wantScale int
		say       string
	}{{130 * time.Millisecond, 6, "its acquires took 130ms (median)"}, {2 * time.Millisecond, 1, ""}} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		w := history.NewWriter(f, 0)
		for i := int64(0); i < 5; i++ {
			call := i * int64(time.Second)
			_, _ = w.Write(history.Op{Process: 1, F: history.Acquire, Type: history.OK, Key: "k", Token: fmt.Sprint(i), TTLms: 100,
				Call: call, Return: call + int64(c.took)})
		}
		if err := errors.Join(w.Close(), f.Close()); err != nil {
			t.Fatal(err)
		}
		row := report.VerifyRow{}
		sized, err := sizeToLock(s, &scenario.Profile{}, 100*time.Millisecond, dir, &row)
		if err != nil {
			t.Fatal(err)
		}
		ttl := scenario.Base
		sized.Workload(&ttl)
		if row.Scale != c.wantScale || !strings.Contains(row.Description, c.say) || ttl.TTL != time.Duration(c.wantScale)*100*time.Millisecond {
			t.Errorf("acquires of %v: ×%d, TTL %v, %q; want ×%d, %q", c.took, row.Scale, ttl.TTL, row.Description, c.wantScale, c.say)
		}
	}
}
