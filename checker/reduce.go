package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// checkKey decides one key. Porcupine alone blows up on hot keys whose
// history is invalid: with k contenders retrying, it must exhaust ~2^k
// orderings of concurrent failed acquires before it can say "illegal". Two
// reductions, both sound (neither can turn an invalid history valid), keep
// it tractable:
//
//  1. Refute without failed acquires first. A failed acquire never changes
//     the state (model table: "unchanged"), so any linearization of the
//     whole history, with those ops removed, is a linearization of the rest
//     (same states, real-time order restricted). Hence: rest not
//     linearizable => whole not linearizable. Double holders and releases
//     of someone else's lease are found here, on a history a fraction of
//     the size. If the rest IS linearizable, its linearization is kept for
//     step 3.
//
//  2. Drop dominated failed acquires. If failed acquires F1 and F2 have
//     F1.call <= F2.call and F2.return <= F1.return, F1 can be removed
//     without changing the answer: given a linearization without F1, put F1
//     right after F2. The state there is the one F2 was legal in; F1's
//     condition (held, eMax + eps >= call) is weaker because F1.call <=
//     F2.call; and every real-time constraint of F1 is implied by F2's,
//     whose interval lies inside F1's. The converse is removal of a
//     state-preserving op, as in 1.
//
//  3. Before searching the whole key, try to build its linearization from
//     rest's by placing each failed acquire (see witness): success proves
//     the key valid. Only if that fails does porcupine search the whole key
//     (with 2 applied). Under heavy load, when latencies of tens of ms make
//     dozens of ops overlap every hand-over, this is what keeps a valid hot
//     key from running into the timeout.
func checkKey(ctx context.Context, m leaseModel, pm porcupine.Model, key string, lops []*lockOp,
	notes []porcupine.Annotation, outDir string, visualizeAll, noReduce bool) (Verdict, *Violation, int) {
	if noReduce {
		switch porcupine.CheckOperationsTimeout(pm, toPorcupine(lops), time.Until(deadlineOf(ctx))) {
		case porcupine.Ok:
			return Valid, nil, 0
		case porcupine.Illegal:
			return Invalid, violation(ctx, m, pm, key, lops, notes, outDir), 0
		}
		return Unknown, nil, 0
	}
	var rest, fails []*lockOp
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ == history.Fail {
			fails = append(fails, lo)
		} else {
			rest = append(rest, lo)
		}
	}
	if len(fails) > 0 && len(rest) > 0 {
		r, lin := linearization(ctx, pm, rest)
		switch r {
		case porcupine.Illegal:
			return Invalid, violation(ctx, m, pm, key, rest, notes, outDir), len(fails)
		case porcupine.Unknown:
			return Unknown, nil, 0
		}
		// 3. A witness: the failed acquires fit into rest's linearization.
		// (Small histories skip it: their visualization needs porcupine's
		// own pass over the whole key.)
		if !visualizeAll && lin != nil && witness(m, rest, lin, fails) {
			return Valid, nil, len(fails)
		}
	}
	if f, eMax := expiredFail(m, lops); f != nil {
		v := &Violation{Key: key}
		if len(lops) <= SmallHistory {
			v = violation(ctx, m, pm, key, lops, notes, outDir) // for its visualization
		}
		v.Message = fmt.Sprintf("%s: p%d acquire fail at %s though every lease that could hold the key had expired by %s (tolerance %v): the key outlived its TTL (stuck lock, or Redis's clock lags ours)",
			key, f.process, history.Seconds(f.orig), history.Seconds(eMax), time.Duration(m.eps))
		if eMax < 0 {
			v.Message = fmt.Sprintf("%s: p%d acquire fail at %s though no lease had been granted that could hold the key: a definite failure with no holder",
				key, f.process, history.Seconds(f.orig))
		}
		v.Ops, v.Window = []int64{f.index}, [2]int64{max(eMax, 0), f.orig}
		return Invalid, v, 0
	}
	reduced := dropDominatedFails(lops)
	pops := toPorcupine(reduced)
	switch porcupine.CheckOperationsTimeout(pm, pops, time.Until(deadlineOf(ctx))) {
	case porcupine.Ok:
		if visualizeAll {
			_, info := porcupine.CheckOperationsVerbose(pm, pops, time.Until(deadlineOf(ctx)))
			_, _ = visualize(pm, info, notes, outDir, key)
		}
		return Valid, nil, len(lops) - len(reduced)
	case porcupine.Illegal:
		return Invalid, violation(ctx, m, pm, key, reduced, notes, outDir), len(lops) - len(reduced)
	}
	return Unknown, nil, len(lops) - len(reduced)
}

// violation explains an illegal key: a second, verbose pass yields the
// partial linearizations, from which explain finds the failure point.
func violation(ctx context.Context, m leaseModel, pm porcupine.Model, key string, lops []*lockOp,
	notes []porcupine.Annotation, outDir string) *Violation {
	v := &Violation{Key: key}
	r, info := porcupine.CheckOperationsVerbose(pm, toPorcupine(lops), max(time.Until(deadlineOf(ctx)), time.Second))
	if r == porcupine.Illegal {
		explain(m, lops, info, v)
		if outDir != "" {
			if f, err := visualize(pm, info, notes, outDir, key); err == nil {
				v.File = f
			}
		}
	}
	if v.Message == "" {
		v.Message = fmt.Sprintf("%s: no linearization of its %d lock ops under the lease model", key, len(lops))
	}
	return v
}

// dropDominatedFails removes every failed acquire whose interval contains
// another failed acquire's interval (reduction 2 above). Of identical
// intervals one is kept. O(n log n).
func dropDominatedFails(lops []*lockOp) []*lockOp {
	var fails []int
	for i, lo := range lops {
		if lo.f == history.Acquire && lo.typ == history.Fail {
			fails = append(fails, i)
		}
	}
	// Latest call first; among equal calls, earliest return first. Then a
	// fail is dominated iff some fail seen before it returned no later.
	slices.SortFunc(fails, func(a, b int) int {
		if c := cmpInt(lops[b].call, lops[a].call); c != 0 {
			return c
		}
		return cmpInt(lops[a].ret, lops[b].ret)
	})
	drop := make([]bool, len(lops))
	minRet := int64(1<<63 - 1)
	for _, i := range fails {
		if lops[i].ret >= minRet {
			drop[i] = true
		}
		minRet = min(minRet, lops[i].ret)
	}
	out := make([]*lockOp, 0, len(lops))
	for i, lo := range lops {
		if !drop[i] {
			out = append(out, lo)
		}
	}
	return out
}
