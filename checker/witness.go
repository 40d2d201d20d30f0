package checker

import (
	"context"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// witness tries to prove a key valid without searching over its failed
// acquires. rest is the key's ops without them, and lin a complete
// linearization of rest (indexes into rest). Each failed acquire is placed
// into lin at the earliest gap that respects real time (after every op that
// returned before it was called, before every op called after it returned)
// and where the model admits it (held, eMax + eps >= call). If every one
// finds a gap, the result is a linearization of the whole key: the key is
// valid, proven by construction. Placing each at its earliest legal gap
// also keeps failed acquires in real-time order among themselves: if F1
// returned before F2 was called, F2's gap is legal for F1 and within F1's
// bounds, so F1's earliest gap is no later (and within one gap they go in
// call order). If some failed acquire finds no gap, nothing is proven and
// the caller falls back to porcupine.
//
// Info ops make the state at a gap a set; choosing per failed acquire
// among sets could mix incompatible branches, so keys with info ops are not
// handled here.
func witness(m leaseModel, rest []*lockOp, lin []int, fails []*lockOp) bool {
	if len(lin) != len(rest) {
		return false
	}
	for _, lo := range rest {
		if lo.typ == history.Info {
			return false
		}
	}
	// states[g] is the state in gap g: after the first g ops of lin.
	states := make([]leaseState, len(lin)+1)
	for g, id := range lin {
		next := m.step(states[g], rest[id])
		if len(next) != 1 {
			return false // not a linearization after all; do not guess
		}
		states[g+1] = next[0]
	}
	// Real-time bounds via sorted views of lin: pos[i] is rest[i]'s place.
	pos := make([]int, len(rest))
	for g, id := range lin {
		pos[id] = g
	}
	byRet := make([]int, len(rest))
	byCall := make([]int, len(rest))
	for i := range rest {
		byRet[i], byCall[i] = i, i
	}
	slices.SortFunc(byRet, func(a, b int) int { return cmpInt(rest[a].ret, rest[b].ret) })
	slices.SortFunc(byCall, func(a, b int) int { return cmpInt(rest[a].call, rest[b].call) })
	// maxPos[k]: latest place among the k ops returning first.
	maxPos := make([]int, len(rest)+1)
	maxPos[0] = -1
	for k, i := range byRet {
		maxPos[k+1] = max(maxPos[k], pos[i])
	}
	// minPos[k]: earliest place among ops byCall[k:].
	minPos := make([]int, len(rest)+1)
	minPos[len(rest)] = len(lin)
	for k := len(rest) - 1; k >= 0; k-- {
		minPos[k] = min(minPos[k+1], pos[byCall[k]])
	}
	for _, f := range fails {
		// Ops returning strictly before f's call must precede it.
		k, _ := slices.BinarySearchFunc(byRet, f.call, func(i int, t int64) int { return cmpInt(rest[i].ret, t) })
		lo := maxPos[k] + 1
		// Ops called strictly after f's return must follow it.
		j, _ := slices.BinarySearchFunc(byCall, f.ret+1, func(i int, t int64) int { return cmpInt(rest[i].call, t) })
		hi := minPos[j]
		placed := false
		for g := lo; g <= hi; g++ {
			if _, ok := m.failStep(states[g], f); ok {
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// linearization returns a complete linearization of lops found by
// porcupine, or nil if it did not finish or found none.
func linearization(ctx context.Context, pm porcupine.Model, lops []*lockOp) (porcupine.CheckResult, []int) {
	r, info := porcupine.CheckOperationsVerbose(pm, toPorcupine(lops), time.Until(deadlineOf(ctx)))
	if r != porcupine.Ok {
		return r, nil
	}
	for _, l := range info.PartialLinearizations()[0] {
		if len(l) == len(lops) {
			return r, l
		}
	}
	return r, nil
}

// expiredFail finds a failed acquire that no linearization admits: one
// called more than eps after the latest expiry of every lease that could
// be linearized before it. The state at a failed acquire's point comes from
// an op linearized earlier, so called no later than the failed acquire's
// return, and its eMax is that op's return (plus horizon for info) plus its
// TTL. If even the largest such eMax + eps is before the call, the key is
// invalid: sound, O(n log n), and it spares porcupine an exhaustive search
// on hot keys whose lock outlived its TTL.
func expiredFail(m leaseModel, lops []*lockOp) (*lockOp, int64) {
	var leases, fails []*lockOp
	for _, lo := range lops {
		switch {
		case lo.f == history.Acquire && lo.typ == history.Fail:
			fails = append(fails, lo)
		case (lo.f == history.Acquire || lo.f == history.Extend) && lo.typ != history.Fail:
			leases = append(leases, lo)
		}
	}
	slices.SortFunc(leases, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	slices.SortFunc(fails, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	reach := make([]int64, len(leases))
	rs := reaches{}
	for i, l := range leases {
		reach[i] = rs.next(l.token, l.add, l.ret, l.ttl)
	}
	eMax := int64(-1 << 62)
	k := 0
	for _, f := range fails {
		for ; k < len(leases) && leases[k].call <= f.ret; k++ {
			eMax = max(eMax, reach[k])
		}
		if f.call > eMax+m.eps {
			return f, eMax
		}
	}
	return nil, 0
}
