package harness_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// TestRun_Rate: the open model. Attempts arrive at 200/s whatever the
// server does; while it is paused for a second the 20 workers hang on
// their ops and the attempts due meanwhile wait. Their latency counts
// from their schedule, so the slow attempts are the ~150 that waited, not
// only the 20 that were in flight: a closed-loop account (return - call)
// would show those 20 alone.
func TestRun_Rate(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 20, Keys: 1000, Duration: 4500 * time.Millisecond, TTL: time.Second, Hold: 0,
		HoldDist: workload.HoldFixed, Rate: 200, OpTimeout: 2 * time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"pause-redis"}, Interval: 2 * time.Second, Duration: time.Second}}}
	res := s.Run(t, "setnx", 1)
	u := res.Summary
	t.Logf("scheduled %d started %d dropped %d shortfall %d; acquire %+v; start lag %+v", u.Scheduled, u.Started, u.Dropped, u.Shortfall,
		res.Latency["acquire"], res.Latency["start_lag"])
	if u.Scheduled == 0 || u.Started > u.Scheduled {
		t.Errorf("%d attempts due, %d started: want some due, and none started that was not", u.Scheduled, u.Started)
	}
	ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Each attempt is due on the schedule, one every 5 ms from the first,
	// whatever the server and the machine did (how many came due in the
	// run's 4.5 s is the machine's: a loaded one starts the schedule late).
	dues := map[int64]bool{}
	first := int64(-1)
	for _, op := range ops {
		if op.F == history.Acquire && op.Scheduled != 0 && (first < 0 || op.Scheduled < first) {
			first = op.Scheduled
		}
	}
	for _, op := range ops {
		if op.F != history.Acquire || op.Scheduled == 0 {
			continue
		}
		if k := op.Scheduled - first; k%int64(5*time.Millisecond) != 0 || dues[k] {
			t.Fatalf("acquire due %v after the first: want a multiple of 5ms, each once", time.Duration(k))
		}
		dues[op.Scheduled-first] = true
	}
	slow := 300 * time.Millisecond
	var fromSchedule, fromCall, unscheduled int
	for _, op := range ops {
		if op.F != history.Acquire {
			continue
		}
		if op.Scheduled == 0 {
			unscheduled++
		}
		if time.Duration(op.Return-op.Start()) > slow {
			fromSchedule++
		}
		if time.Duration(op.Return-op.Call) > slow {
			fromCall++
		}
	}
	if unscheduled > 0 || fromSchedule < 50 || fromSchedule < 3*fromCall {
		t.Errorf("acquires over %v: %d from their schedule, %d from their call (%d unscheduled); want the waiting ones counted: at least 50, 3 times the in-flight ones",
			slow, fromSchedule, fromCall, unscheduled)
	}
	if p := res.Latency["acquire"]; p.P99 < float64(slow/time.Millisecond) || res.Latency["start_lag"].Max < float64(slow/time.Millisecond) {
		t.Errorf("results.json acquire p99 %.1f ms, start lag max %.1f ms: want the pause in both", p.P99, res.Latency["start_lag"].Max)
	}
	rf, err := report.ReadResults(res.Dir)
	if err != nil || rf.Summary.Scheduled != u.Scheduled || rf.Summary.Shortfall != u.Scheduled-u.Started {
		t.Errorf("results.json summary %+v, %v", rf.Summary, err)
	}
}
