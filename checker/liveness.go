package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// livenessSpec registers Liveness, of the lease contract: the longest
// stalls merge by maximum.
var livenessSpec = Spec{Check: Func("liveness", func(_ context.Context, ops []history.Op, opt Options) Result { return Liveness(ops, opt) }),
	Figures: map[string]FigureMerge{"stuck_acquires": Sum, "longest_stuck_ms": Max, "abandoned_leases": Sum, "longest_abandoned_stall_ms": Max,
		"blocking_acquires": Sum, "free_while_waiting": Sum, "starved_waiters": Sum, "longest_starved_past_bound_ms": Max},
	Guarantee: LeaseContract}

// Liveness finds stuck locks: a key whose acquires keep failing longer than
// ttl + tolerance + horizon after the latest moment any lease could have
// held it. It is deliberately coarse (no release shortens a lease here), so
// it flags only locks that truly never let go; the linearizable checker
// catches the finer cases. Its figures also say how many leases were never
// released and the longest their key then stayed unavailable (Abandoned).
// On a history of blocking acquires it also finds starved waiters
// (starvedWaiters). opt is resolved (Options.Resolved).
func Liveness(ops []history.Op, opt Options) Result {
	res := Result{Name: "liveness", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool { return op.F == history.Acquire || op.F == history.Extend })
	var stuckOps int64
	var longest time.Duration
	for _, key := range keys {
		n, l := stuckOn(key, widened(groups[key]), opt, res.add)
		stuckOps += n
		longest = max(longest, l)
	}
	res.Figures["stuck_acquires"] = stuckOps
	res.Figures["longest_stuck_ms"] = longest.Milliseconds()
	// Leases no one released (a skipped unlock, a crashed holder): the
	// TTL heals them, after a stall this long at most.
	var stall int64
	abandoned := Abandoned(ops)
	for _, s := range abandoned {
		if s.To >= 0 {
			stall = max(stall, s.To-s.From)
		}
	}
	res.Figures["abandoned_leases"] = int64(len(abandoned))
	res.Figures["longest_abandoned_stall_ms"] = time.Duration(stall).Milliseconds()
	// Waiters that slept on a free key past their lock's wake-up bound
	// (starved.go), on a history with blocking acquires.
	if judged, chances, starved, past := starvedWaiters(ops, opt, res.add); judged > 0 {
		res.Figures["blocking_acquires"], res.Figures["free_while_waiting"], res.Figures["starved_waiters"] = judged, chances, starved
		res.Figures["longest_starved_past_bound_ms"] = past.Milliseconds()
	}
	if res.ViolationCount > 0 {
		res.Verdict = Invalid
	}
	return res
}

// stuckOn scans one key's acquires and extends for runs of failed
// acquires past every lease's reach, reports each run to add, and returns
// how many acquires were stuck and the longest time past the reach.
func stuckOn(key string, kops []*history.Op, opt Options, add func(Violation)) (int64, time.Duration) {
	slack := int64(opt.ClockTolerance + opt.InfoHorizon)
	sortByWeighing(kops)
	rs := newReach()
	var run stuckRun
	var lastEnd int64 = -1 // latest expiry of any lease so far
	var last *history.Op   // the op that set lastEnd
	var stuck int64
	var longest time.Duration
	report := func() {
		if run.first != nil {
			v, gap := run.violation(key, lastEnd, last)
			add(v)
			longest = max(longest, gap)
			run = stuckRun{}
		}
	}
	for _, op := range kops {
		switch {
		case op.Type == history.Fail && op.F == history.Acquire:
			if op.Call > lastEnd+slack {
				run.add(op)
				stuck++
			}
		case op.Type != history.Fail:
			// Any acquire or extend that may have happened can hold the
			// key until its latest effect (history.Op.Latest: its return,
			// plus horizon for info not answered) plus its TTL.
			if op.F == history.Acquire && op.Type == history.OK {
				report()
			}
			end := rs.see(op.Token, op.F == history.Extend && op.Mode == history.ExtendAdd, op.Latest(int64(opt.InfoHorizon)), int64(op.TTL()))
			if end > lastEnd {
				lastEnd, last = end, op
			}
		}
	}
	report()
	return stuck, longest
}

// widened is kops with each op from another machine's clock widened by
// its clock_bound (copies): a stall counts only where it is certain.
func widened(kops []*history.Op) []*history.Op {
	out := make([]*history.Op, len(kops))
	for i, op := range kops {
		if b := op.ClockBound; b > 0 {
			c := *op
			c.Call, c.Return = max(0, op.Call-b), op.Return+b
			op = &c
		}
		out[i] = op
	}
	return out
}

// sortByWeighing orders a key's ops as stuckOn weighs them. A failed
// acquire is weighed at its return: any lease whose acquire was called
// before then may be what it ran into, even if that acquire was called
// after the failed one. Leases count from their call; at equal times
// leases go first.
func sortByWeighing(kops []*history.Op) {
	at := func(op *history.Op) int64 {
		if op.Type == history.Fail && op.F == history.Acquire {
			return op.Return
		}
		return op.Call
	}
	slices.SortStableFunc(kops, func(a, b *history.Op) int {
		if c := cmpInt(at(a), at(b)); c != 0 {
			return c
		}
		return cmpBool(a.Type == history.Fail, b.Type == history.Fail)
	})
}

// stuckRun is a run of failed acquires on a key that no lease could
// hold.
type stuckRun struct {
	first, worst *history.Op
	n            int64
}

func (r *stuckRun) add(op *history.Op) {
	if r.first == nil {
		r.first = op
	}
	r.worst = op
	r.n++
}

// violation is the run as a violation, after the last lease that could
// hold the key (last, expired by lastEnd), and how long it was stuck.
func (r *stuckRun) violation(key string, lastEnd int64, last *history.Op) (Violation, time.Duration) {
	gap := time.Duration(r.worst.Call - lastEnd)
	holder := "no lease at all"
	if last != nil {
		holder = fmt.Sprintf("the last lease that could hold it (p%d %s %s, lease %s, ttl %v) expired by %s",
			last.Process, last.F, last.Type, short(last.Token), last.TTL(), history.Seconds(lastEnd))
	}
	return Violation{Key: key,
		Message: fmt.Sprintf("stuck lock on %s: %d acquire(s) failed from %s to %s, though %s; unacquirable for %v past it",
			key, r.n, history.Seconds(r.first.Call), history.Seconds(r.worst.Call), holder, gap.Round(time.Millisecond)),
		Ops:    []int64{r.first.Index, r.worst.Index},
		Window: [2]int64{max(lastEnd, 0), r.worst.Return}}, gap
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
