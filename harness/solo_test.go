package harness_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/workload"
)

// TestRun_SoloKeys: clients given keys of their own (workload.Config
// SoloKeys) lock only those, no other client locks them, and, stopped
// past the TTL in every other hold with no fault scheduled, their
// lock's overdue extends land on free keys: late_extend_free is met on
// purpose, not by a pause that happened to find such a holder. Without
// them the same run has none. setnx stays valid.
func TestRun_SoloKeys(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 6, Keys: 2, SoloKeys: 2, Duration: 4 * time.Second, TTL: 200 * time.Millisecond,
		Hold: 600 * time.Millisecond, HoldDist: workload.HoldFixed, ExtendEvery: 66 * time.Millisecond,
		Retry: workload.RetryBackoff, Margin: 40 * time.Millisecond}
	res := run(t, "setnx", w)
	if res.Verdict != checker.Valid {
		t.Fatalf("setnx with solo keys: %s, want valid: %+v", res.Verdict, res.Findings.Checkers)
	}
	if got := res.Findings.Coverage[checker.LateExtendFree]; got < 3 {
		t.Errorf("late_extend_free %d with 2 solo clients over 4 s, want at least 3 (coverage %v)", got, res.Findings.Coverage)
	}
	ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	solo := map[string]int{workload.KeyName(w.KeyPrefix, w.Keys): 0, workload.KeyName(w.KeyPrefix, w.Keys+1): 1}
	seen := map[string]bool{}
	for _, op := range ops {
		if op.F == history.Nemesis {
			continue
		}
		if p, ok := solo[op.Key]; ok {
			seen[op.Key] = true
			if op.Process != p {
				t.Fatalf("op #%d on solo key %s by process %d, want only %d", op.Index, op.Key, op.Process, p)
			}
		} else if op.Process < 2 {
			t.Fatalf("op #%d: solo client %d on shared key %s", op.Index, op.Process, op.Key)
		}
	}
	if len(seen) != 2 {
		t.Errorf("solo keys locked: %v, want both", seen)
	}

	w.SoloKeys = 0
	res = run(t, "setnx", w)
	if got := res.Findings.Coverage[checker.LateExtendFree]; got != 0 {
		t.Errorf("late_extend_free %d without solo keys or faults, want 0", got)
	}
}
