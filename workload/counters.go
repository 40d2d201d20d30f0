package workload

import (
	"sync/atomic"

	"github.com/lockcheck/lockcheck/history"
)

// Counters are live totals of what the clients see that the history does
// not record (op counts come from the history itself), safe to read while
// the run goes on.
type Counters struct {
	lost    atomic.Int64
	giveUps atomic.Int64
	notSent atomic.Int64
	undone  atomic.Int64
	crashed atomic.Int64
	paused  atomic.Int64
	cutOff  atomic.Int64
	skipped atomic.Int64
	// The open model's attempts: due, started by a worker, dropped with
	// the backlog full.
	scheduled, started, dropped atomic.Int64
}

// Snapshot returns the current totals.
func (c *Counters) Snapshot() history.Unrecorded {
	return history.Unrecorded{Lost: c.lost.Load(), GiveUps: c.giveUps.Load(), NotSent: c.notSent.Load(),
		Undone: c.undone.Load(), Crashed: c.crashed.Load(), Paused: c.paused.Load(), CutOff: c.cutOff.Load(),
		Skipped: c.skipped.Load(), Scheduled: c.scheduled.Load(), Started: c.started.Load(), Dropped: c.dropped.Load()}
}
