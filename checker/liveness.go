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
	Figures:   map[string]FigureMerge{"stuck_acquires": Sum, "longest_stuck_ms": Max, "abandoned_leases": Sum, "longest_abandoned_stall_ms": Max},
	Guarantee: LeaseContract}

// Liveness finds stuck locks: a key whose acquires keep failing longer than
// ttl + tolerance + horizon after the latest moment any lease could have
// held it. It is deliberately coarse (no release shortens a lease here), so
// it flags only locks that truly never let go; the linearizable checker
// catches the finer cases. Its figures also say how many leases were never
// released and the longest their key then stayed unavailable (Abandoned).
func Liveness(ops []history.Op, opt Options) Result {
	opt = opt.Resolved()
	res := Result{Name: "liveness", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool { return op.F == history.Acquire || op.F == history.Extend })
	var stuckOps int64
	var longest time.Duration
	for _, key := range keys {
		n, l := stuckOn(key, groups[key], opt, res.add)
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
	// A failed acquire is weighed at its return: any lease whose acquire
	// was called before then may be what it ran into, even if that acquire
	// was called after the failed one. Leases count from their call; at
	// equal times leases go first.
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
	rs := newReach()
	var lastEnd int64 = -1 // latest expiry of any lease so far
	var last *history.Op   // the op that set lastEnd
	var first, worst *history.Op
	var n, stuck int64
	var longest time.Duration
	report := func() {
		if first == nil {
			return
		}
		gap := time.Duration(worst.Call - lastEnd)
		longest = max(longest, gap)
		holder := "no lease at all"
		if last != nil {
			holder = fmt.Sprintf("the last lease that could hold it (p%d %s %s, lease %s, ttl %v) expired by %s",
				last.Process, last.F, last.Type, short(last.Token), last.TTL(), history.Seconds(lastEnd))
		}
		add(Violation{Key: key,
			Message: fmt.Sprintf("stuck lock on %s: %d acquire(s) failed from %s to %s, though %s; unacquirable for %v past it",
				key, n, history.Seconds(first.Call), history.Seconds(worst.Call), holder, gap.Round(time.Millisecond)),
			Ops:    []int64{first.Index, worst.Index},
			Window: [2]int64{max(lastEnd, 0), worst.Return}})
		first, worst, n = nil, nil, 0
	}
	for _, op := range kops {
		switch {
		case op.Type == history.Fail && op.F == history.Acquire:
			if op.Call > lastEnd+slack {
				if first == nil {
					first = op
				}
				worst = op
				n++
				stuck++
			}
		case op.Type != history.Fail:
			// Any acquire or extend that may have happened can hold the
			// key until its return (plus horizon, for info) plus its TTL.
			if op.F == history.Acquire && op.Type == history.OK {
				report()
			}
			ret := op.Return
			if op.Type == history.Info {
				ret += int64(opt.InfoHorizon)
			}
			end := rs.see(op.Token, op.F == history.Extend && op.Mode == history.ExtendAdd, ret, int64(op.TTL()))
			if end > lastEnd {
				lastEnd, last = end, op
			}
		}
	}
	report()
	return stuck, longest
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
