package workload

import (
	"sync/atomic"

	"github.com/lockcheck/lockcheck/history"
)

var funcs = [...]history.Func{history.Acquire, history.Release, history.Extend, history.Write}
var types = [...]history.Type{history.OK, history.Fail, history.Info}

// Counters are live totals of a run, safe to read while it runs.
type Counters struct {
	ops      [len(funcs)][len(types)]atomic.Int64
	cutShort atomic.Int64
	lost     atomic.Int64
	late     atomic.Int64
	giveUps  atomic.Int64
	notSent  atomic.Int64
	undone   atomic.Int64
	crashed  atomic.Int64
	paused   atomic.Int64
	rejected atomic.Int64
}

// count is called for every op: indexes come from a switch, not a search.
func (c *Counters) count(f history.Func, t history.Type) {
	fi, ti := funcIndex(f), typeIndex(t)
	if fi >= 0 && ti >= 0 {
		c.ops[fi][ti].Add(1)
	}
}

func funcIndex(f history.Func) int {
	switch f {
	case history.Acquire:
		return 0
	case history.Release:
		return 1
	case history.Extend:
		return 2
	case history.Write:
		return 3
	}
	return -1
}

func typeIndex(t history.Type) int {
	switch t {
	case history.OK:
		return 0
	case history.Fail:
		return 1
	case history.Info:
		return 2
	}
	return -1
}

// Summary is a snapshot of Counters.
type Summary struct {
	// Ops counts ops by f, then type.
	Ops map[history.Func]map[history.Type]int64 `json:"ops"`
	// CutShort counts critical sections a client left at its lease's
	// deadline before it wanted to.
	CutShort int64 `json:"cut_short"`
	// Lost counts leases the lock reported lost (watchdog).
	Lost int64 `json:"lost"`
	// LateExits counts clients that woke from their critical section after
	// the lease's deadline (descheduled past the margin); the section is
	// recorded as ending when its timer was due.
	LateExits int64 `json:"late_exits"`
	// GiveUps counts acquisitions abandoned after the last retry.
	GiveUps int64 `json:"give_ups"`
	// NotSent counts operations that never reached Redis (connection
	// refused): they did not happen and are not in the history.
	NotSent int64 `json:"not_sent"`
	// Undone counts acquisitions that reached no majority either way and
	// gave back what they took (Redlock split votes); not in the history.
	Undone int64 `json:"undone,omitempty"`
	// Crashed counts clients that died (crash-client); Paused, clients
	// stopped between acquire and write (pause-client).
	Crashed int64 `json:"crashed"`
	Paused  int64 `json:"paused"`
	// StaleRejected counts writes the fenced resource rejected.
	StaleRejected int64 `json:"stale_rejected"`
}

// Snapshot returns the current totals.
func (c *Counters) Snapshot() Summary {
	s := Summary{Ops: map[history.Func]map[history.Type]int64{},
		CutShort: c.cutShort.Load(), Lost: c.lost.Load(), LateExits: c.late.Load(), GiveUps: c.giveUps.Load(),
		NotSent: c.notSent.Load(), Undone: c.undone.Load(), Crashed: c.crashed.Load(), Paused: c.paused.Load(), StaleRejected: c.rejected.Load()}
	for fi, f := range funcs {
		m := map[history.Type]int64{}
		for ti, t := range types {
			m[t] = c.ops[fi][ti].Load()
		}
		s.Ops[f] = m
	}
	return s
}

// Total returns the number of ops of every f and type.
func (s Summary) Total() int64 {
	var n int64
	for _, m := range s.Ops {
		for _, v := range m {
			n += v
		}
	}
	return n
}
