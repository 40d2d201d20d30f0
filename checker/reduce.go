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
//     the size. If the rest IS linearizable, that proves nothing, and step 2
//     checks the whole history.
//
//  2. Drop dominated failed acquires. If failed acquires F1 and F2 have
//     F1.call <= F2.call and F2.return <= F1.return, F1 can be removed
//     without changing the answer: given a linearization without F1, put F1
//     right after F2. The state there is the one F2 was legal in; F1's
//     condition (held, eMax + eps >= call) is weaker because F1.call <=
//     F2.call; and every real-time constraint of F1 is implied by F2's,
//     whose interval lies inside F1's. The converse is removal of a
//     state-preserving op, as in 1.
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
	rest := make([]*lockOp, 0, len(lops))
	for _, lo := range lops {
		if !(lo.f == history.Acquire && lo.typ == history.Fail) {
			rest = append(rest, lo)
		}
	}
	if len(rest) < len(lops) {
		switch porcupine.CheckOperationsTimeout(pm, toPorcupine(rest), time.Until(deadlineOf(ctx))) {
		case porcupine.Illegal:
			return Invalid, violation(ctx, m, pm, key, rest, notes, outDir), len(lops) - len(rest)
		case porcupine.Unknown:
			return Unknown, nil, 0
		}
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
