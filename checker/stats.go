package checker

import (
	"context"
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// statsSpec registers Stats: from the counts, each "<f>_<type>" and
// "ops" summed.
var statsSpec = Spec{Check: Func("stats", func(_ context.Context, ops []history.Op, _ Options) Result { return Stats(ops) }),
	Counts: StatsOf, Figures: statsFigures()}

func statsFigures() map[string]FigureMerge {
	m := map[string]FigureMerge{"ops": Sum}
	for _, f := range []history.Func{history.Acquire, history.Release, history.Extend, history.Write, history.Nemesis} {
		for _, t := range []history.Type{history.OK, history.Fail, history.Info} {
			m[string(f)+"_"+string(t)] = Sum
		}
	}
	return m
}

// Stats counts ops by f and type (figures named "<f>_<type>"). It is invalid
// when no acquire succeeded: a run that never held the lock proves nothing.
func Stats(ops []history.Op) Result { return StatsOf(history.Count(ops)) }

// StatsOf is Stats of a history's counts.
func StatsOf(counts history.Counts) Result {
	res := Result{Name: "stats", Verdict: Valid, Figures: map[string]int64{}}
	for f, m := range counts {
		for t, n := range m {
			if n > 0 {
				res.Figures[string(f)+"_"+string(t)] = n
			}
		}
	}
	res.Figures["ops"] = counts.Total()
	switch {
	case res.Figures["acquire_ok"] > 0:
	case res.Figures["acquire_info"] > 0 && res.Figures["acquire_fail"] == 0:
		res.Verdict = Invalid
		res.add(Violation{Message: fmt.Sprintf("no acquire succeeded: all %d ended indeterminate (no answer within the op timeout): the lock never answered (a lock process that does not reply?) or Redis did not; the run exercised nothing",
			res.Figures["acquire_info"])})
	default:
		res.Verdict = Invalid
		res.add(Violation{Message: "no acquire succeeded: the run exercised nothing (is Redis reachable, is the TTL long enough?)"})
	}
	return res
}
