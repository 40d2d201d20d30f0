package testutil

import (
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// OnlyLateOverlaps says whether the run in dir broke nothing but mutual
// exclusion, and only where the first of the two writes left its section
// after its lease's deadline (a late exit: its client woken late, past
// the margin, by a machine busier than the margin allows: a fresh-clone
// CI's setnx holder left 96 ms after its section's end on a 100 ms
// lease). The holder, not the lock, overstayed: a pause the machine
// made. Every other checker, the lease contract first, must hold.
func OnlyLateOverlaps(t *testing.T, dir string) bool {
	t.Helper()
	res, err := report.ReadResults(dir)
	if err != nil {
		return false
	}
	var m checker.Result
	for _, c := range res.Checkers {
		switch {
		case c.Name == "mutex":
			m = c
		case c.Verdict != checker.Valid:
			return false
		}
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil || m.ViolationCount == 0 || len(m.Violations) != m.ViolationCount {
		return false
	}
	for _, v := range m.Violations {
		// The write that entered first is the one that overstayed.
		first := -1
		for _, i := range v.Ops {
			if i < 0 || int(i) >= len(ops) {
				return false
			}
			if first < 0 || ops[i].Call < ops[first].Call {
				first = int(i)
			}
		}
		if first < 0 || !ops[first].Late {
			return false
		}
	}
	t.Logf("mutex: %d double holder(s), each with a write that left after its lease (late exits %d): %s", m.ViolationCount, res.Summary.LateExits, m.Violations[0].Message)
	return true
}

// LogUndecided logs, for the run in dir, each checker's undecided keys
// with why (out of time, of memory, a loose clock, interrupted) and the
// key's size: what a test that got an unknown verdict needs to say.
func LogUndecided(t *testing.T, dir string) {
	t.Helper()
	res, err := report.ReadResults(dir)
	if err != nil {
		t.Logf("%s: no results to say why: %v", dir, err)
		return
	}
	for _, c := range res.Checkers {
		for _, u := range c.Undecided {
			t.Logf("%s undecided at key %s: %s after %d ms, %d lock ops of which %d indeterminate", c.Name, u.Key, u.Reason, u.ElapsedMS, u.LockOps, u.InfoOps)
		}
		if c.Verdict == checker.Unknown && len(c.Undecided) == 0 {
			t.Logf("%s unknown: %s", c.Name, c.Note)
		}
	}
}
