package checker

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// fencingSpec registers Fencing, of the mutual-exclusion guarantee.
var fencingSpec = Spec{Check: Func("fencing", func(_ context.Context, ops []history.Op, _ Options) Result { return Fencing(ops) }),
	Figures: map[string]FigureMerge{"fenced_writes": Sum, "stale_rejected": Sum}, Guarantee: MutualExclusion}

// Fencing checks the writes that carry a fencing token: on each key, the
// tokens of accepted writes, in entry order, never go backwards, and no
// token is accepted for two different leases (a counter that lost its
// increments in a failover hands out a token again, and a resource that
// rejects only lower tokens accepts both holders). It also
// counts the stale writes the resource rejected (figure "stale_rejected"):
// each is a stale holder that fencing stopped.
func Fencing(ops []history.Op) Result {
	res := Result{Name: "fencing", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool { return op.F == history.Write && op.Fence > 0 })
	var accepted, rejected int64
	for _, key := range keys {
		ws := groups[key]
		slices.SortFunc(ws, func(a, b *history.Op) int {
			if c := cmpInt(a.Call, b.Call); c != 0 {
				return c
			}
			return cmpInt(a.Index, b.Index)
		})
		var top *history.Op // accepted write with the highest fence so far
		for _, w := range ws {
			if w.Type != history.OK {
				rejected++
				continue
			}
			accepted++
			switch {
			case top != nil && w.Fence < top.Fence:
				res.add(Violation{Key: key,
					Message: fmt.Sprintf("fencing token went backwards on %s: p%d's write at %s was accepted with token %d after p%d's with token %d at %s",
						key, w.Process, history.Seconds(w.Call), w.Fence, top.Process, top.Fence, history.Seconds(top.Call)),
					Ops: []int64{top.Index, w.Index}, Window: [2]int64{top.Call, w.Return}})
			case top != nil && w.Fence == top.Fence && (w.Token != top.Token || w.Process != top.Process):
				res.add(Violation{Key: key,
					Message: fmt.Sprintf("fencing token %d reused on %s: accepted for p%d's lease %s at %s and for p%d's lease %s at %s",
						w.Fence, key, top.Process, short(top.Token), history.Seconds(top.Call), w.Process, short(w.Token), history.Seconds(w.Call)),
					Ops: []int64{top.Index, w.Index}, Window: [2]int64{top.Call, w.Return}})
			}
			if top == nil || w.Fence > top.Fence {
				top = w
			}
		}
	}
	res.Figures["fenced_writes"] = accepted
	res.Figures["stale_rejected"] = rejected
	if res.ViolationCount > 0 {
		res.Verdict = Invalid
	}
	return res
}
