package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// mutexSpec registers the mutual-exclusion guarantee: each history
// judged by its shape's rule at the resource (Shape.AtResource; a
// mutex's: Mutex).
var mutexSpec = Spec{Check: Func("mutex", func(_ context.Context, ops []history.Op, opt Options) Result {
	sh, err := shapeOf(ops, opt)
	if err != nil {
		return unknownShape("mutex", err)
	}
	return sh.AtResource(ops)
}),
	Figures:   map[string]FigureMerge{"writes": Sum, "keys": Sum, "double_holders": Sum, "over_admitted": Sum, "peak_holders": Max, "permits": Max, "writer_overlaps": Sum, "reentries": Sum},
	Guarantee: MutualExclusion}

// surely is ws with each write shrunk to when it was in its section for
// certain: by its clock_bound at each end (none left: it is dropped).
// The ops shrunk are copies; ws is left as it was.
func surely(ws []*history.Op) []*history.Op {
	out := ws[:0:0]
	for _, w := range ws {
		if b := w.ClockBound; b > 0 {
			if w.Call+b >= w.Return-b {
				continue
			}
			c := *w
			c.Call, c.Return = w.Call+b, w.Return-b
			w = &c
		}
		out = append(out, w)
	}
	return out
}

// DoubleHolders is how many double holders the mutex checker found.
func DoubleHolders(f Findings) int {
	c, _ := f.Checker(mutexSpec.Name())
	return c.ViolationCount
}

// Mutex finds double holders as the protected resource saw them: two
// accepted writes on one key, from different leases, that overlap in time.
//
// Per key it sorts accepted writes by entry and sweeps, keeping the write
// that exits last so far; any write that enters before that one exits
// overlaps it. O(n log n). A lease is (process, token): a client holds one
// lease at a time, and a lock that hands every client the same value (a
// classic mistake) must still show two holders. A write recorded on
// another machine's clock (clock_bound b) was surely in its section only
// over [call + b, return - b]: two writes are double holders only where
// they overlap for certain.
func Mutex(ops []history.Op) Result {
	res := Result{Name: "mutex", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool { return op.F == history.Write && op.Type == history.OK })
	var writes int64
	for _, key := range keys {
		writes += int64(len(groups[key]))
		ws := surely(groups[key])
		slices.SortFunc(ws, func(a, b *history.Op) int {
			if a.Call != b.Call {
				return cmpInt(a.Call, b.Call)
			}
			return cmpInt(a.Index, b.Index)
		})
		var last *history.Op // the write that exits last among those swept
		for _, w := range ws {
			if last != nil && w.Call < last.Return && (w.Process != last.Process || w.Token != last.Token) {
				overlap := min(w.Return, last.Return) - w.Call
				res.add(Violation{
					Key: key,
					Message: fmt.Sprintf("double holder on %s: p%d (lease %s) wrote %s..%s while p%d (lease %s) wrote %s..%s; overlap %v",
						key, last.Process, short(last.Token), history.Seconds(last.Call), history.Seconds(last.Return),
						w.Process, short(w.Token), history.Seconds(w.Call), history.Seconds(w.Return),
						time.Duration(overlap).Round(time.Microsecond)),
					Ops:    []int64{last.Index, w.Index},
					Window: [2]int64{last.Call, max(w.Return, last.Return)},
				})
			}
			if last == nil || w.Return > last.Return {
				last = w
			}
		}
	}
	res.Figures["writes"] = writes
	res.Figures["keys"] = int64(len(keys))
	res.Figures["double_holders"] = int64(res.ViolationCount)
	if res.ViolationCount > 0 {
		res.Verdict = Invalid
	}
	return res
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// short abbreviates a token for messages.
func short(tok string) string {
	if len(tok) > 8 {
		return tok[:8]
	}
	if tok == "" {
		return "-"
	}
	return tok
}
