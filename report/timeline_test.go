package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// TestTimeline_FewestOpsFirst: a violation's timeline draws its fewest
// ops whatever else is near: the lease set before the window is drawn
// (the time drawn reaches it, and a history read in part keeps it:
// laneOps draws what OnTimeline keeps), its client and the refusal's get
// the first lanes though 80 other clients crowd the window, and both are
// ringed in black.
func TestTimeline_FewestOpsFirst(t *testing.T) {
	ms := int64(1_000_000)
	ops := []history.Op{{Index: 0, Process: 200, F: history.Acquire, Type: history.OK, Key: "k", Token: "a", TTLms: 100, Call: 0, Return: 1 * ms}}
	for p := range 80 {
		call := (500 + int64(p)) * ms
		ops = append(ops, history.Op{Index: int64(len(ops)), Process: p, F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 100, Call: call, Return: call + ms})
	}
	refusal := history.Op{Index: int64(len(ops)), Process: 201, F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 100, Call: 560 * ms, Return: 561 * ms}
	ops = append(ops, refusal)
	v := checker.Violation{Key: "k", Window: [2]int64{500 * ms, 600 * ms}, Minimal: []int64{0, refusal.Index}}

	on := OnTimeline([]checker.Violation{v})
	var ptrs []*history.Op
	for i := range ops {
		if on(&ops[i]) {
			ptrs = append(ptrs, &ops[i])
		}
	}
	if !slices.Contains(ptrs, &ops[0]) {
		t.Fatalf("OnTimeline leaves out the fewest ops' lease, set before the window")
	}
	segs, procs, lo, _ := laneOps(ptrs, v)
	if len(procs) != 60 || procs[0] != 200 || procs[1] != 201 {
		t.Fatalf("lanes %v: want 60, the fewest ops' clients (p200, p201) first", procs)
	}
	if lo > 0 {
		t.Errorf("the timeline starts at %d ns, after the lease it must show (set at 0)", lo)
	}
	drawn := 0
	for _, s := range segs {
		if s.op.Index == 0 || s.op.Index == refusal.Index {
			drawn++
		}
	}
	if drawn != 2 {
		t.Errorf("%d of the 2 fewest ops drawn", drawn)
	}
	// An op's line is 3 points wide, its ring 6.
	if n := strings.Count(string(timeline(ptrs, v, nil)), "stroke-width:6"); n != 2 {
		t.Errorf("%d rings drawn, want the 2 fewest ops'", n)
	}
	if n := strings.Count(string(timeline(ptrs, checker.Violation{Key: "k", Window: v.Window}, nil)), "stroke-width:6"); n != 0 {
		t.Errorf("%d rings drawn for a violation without its fewest ops", n)
	}
}
