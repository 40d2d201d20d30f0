package scenario

import (
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// TestBattery_RunHoldsItsHits: each scenario's run holds at least as
// many fault windows as the hits it requires of its fault, so that one
// run can meet them (a battery past its budget, on a loaded machine or
// with a lock of a process per client, gets no second run). A kill's
// window lasts the kill's own hold (kill-redis restarts at once, or
// after RestartDelay), so its length in the schedule is what spaces
// them: at the default 2 s an 8 s run held two kills, and kill-none and
// kill-always require three.
func TestBattery_RunHoldsItsHits(t *testing.T) {
	for _, s := range Battery() {
		w := Base
		if s.Workload != nil {
			s.Workload(&w)
		}
		cfg, err := s.Nemesis.WithDefaults()
		if err != nil || len(cfg.Faults) != 1 {
			continue
		}
		need := s.Requires[checker.Hit(cfg.Faults[0])]
		if got := len(nemesis.Schedule(cfg, w.Duration)); got < need {
			t.Errorf("%s: %d windows of %s in its %v run, want at least the %d hits it requires", s.Name, got, cfg.Faults[0], w.Duration, need)
		}
	}
}
