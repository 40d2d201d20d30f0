package checker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// budgetOverhead is what a check's process needs besides its searches'
// budget: the runtime, the history, and garbage between collections.
const budgetOverhead = 150 << 20

// TestBudget_UnknownWithinMemory checks, in a process of its own so that
// its peak RSS is the check's, keys that porcupine cannot decide in
// 200 MB: a stall (dozens of orphans to order, the cover witness turned
// off), and one key of a correct lease lock whose ops reach a second
// either side of their instant with one in five of the ok ones
// indeterminate, at tolerance 0 and a 100 ms info horizon (the shape
// that passed an 11.8 GiB budget by 45 %: genSlowInfo). Each key is
// unknown for want of memory, says so with its info ops, and the process
// stays under the budget plus budgetOverhead. Under the race detector,
// whose shadow memory is several times the heap, only the verdict is
// checked (and the budget is 50 MB: childBudget).
func TestBudget_UnknownWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of 200 MB")
	}
	for _, shape := range []struct {
		name    string
		minInfo int
	}{{"stall", 30}, {"slow-info", 5}} {
		t.Run(shape.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBudget_Child$")
			cmd.Env = append(os.Environ(), "LOCKCHECK_BUDGET_CHILD="+shape.name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var r Result
			line := out[strings.Index(string(out), "{"):]
			if err := json.NewDecoder(strings.NewReader(string(line))).Decode(&r); err != nil {
				t.Fatalf("child's result: %v\n%s", err, out)
			}
			if r.Verdict != Unknown || len(r.Undecided) != 1 || r.Undecided[0].Reason != OutOfMemory || r.Undecided[0].InfoOps < shape.minInfo {
				t.Fatalf("got %s %+v, want unknown for want of memory with its %d+ info ops", r.Verdict, r.Undecided, shape.minInfo)
			}
			if !strings.Contains(r.Note, "--check-memory") || !strings.Contains(r.Note, "--info-horizon") {
				t.Errorf("note %q names no fix", r.Note)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("peak RSS %d MB with a %d MB budget; %s", rss>>20, childBudget()>>20, r.Undecided[0])
			if !raceEnabled && rss > childBudget()+budgetOverhead {
				t.Errorf("peak RSS %d MB, want under %d MB + %d MB", rss>>20, childBudget()>>20, budgetOverhead>>20)
			}
		})
	}
}

// TestBudget_Child is TestBudget_UnknownWithinMemory's check.
func TestBudget_Child(t *testing.T) {
	var ops []history.Op
	var opt Options
	switch os.Getenv("LOCKCHECK_BUDGET_CHILD") {
	case "":
		t.Skip("run by TestBudget_UnknownWithinMemory")
	case "stall":
		// The witness's orphan holders (holdersFor) decide this stall
		// in a moment; the budget is of the search, so they are off.
		h := hardStall()
		ops, opt = h.ops, Options{ClockTolerance: Exactly(h.eps), InfoHorizon: Exactly(h.horizon), skip: skipCover | skipSurplus | skipHolders}
	default:
		ops, opt = genSlowInfo(8, 50, time.Second, 5), Options{ClockTolerance: Exactly(0), InfoHorizon: Exactly(100 * time.Millisecond)}
	}
	// The budget is the event waited for; the timeout only bounds the
	// wait, long enough for a machine whose cores are busy elsewhere (a
	// loaded CI gave the race-built search five minutes of wall time and
	// too little CPU to fill 50 MB).
	opt.Timeout, opt.Memory = 15*time.Minute, childBudget()
	r := Linearizable(context.Background(), ops, opt.Resolved())
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// childBudget is TestBudget_Child's memory: 200 MB, or 50 MB under the
// race detector, where only the verdict is checked and the search that
// fills the budget runs several times slower.
func childBudget() int64 {
	if raceEnabled {
		return 50 << 20
	}
	return 200 << 20
}

// hardStall is a stall of 40 orphans, each called a microsecond after the
// one before, so that none is interchangeable with another.
func hardStall() oracleHistory {
	for seed := uint64(0); ; seed++ {
		h := simStall(rand.New(rand.NewPCG(seed, 31)))
		var orphans int
		for i := range h.ops {
			if op := &h.ops[i]; op.Type == history.Info && op.F == history.Acquire {
				op.Call += int64(orphans) * int64(time.Microsecond)
				op.Return = max(op.Return, op.Call)
				orphans++
			}
		}
		if orphans >= 36 {
			return h
		}
	}
}
