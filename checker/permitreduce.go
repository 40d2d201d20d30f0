package checker

import (
	"cmp"
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// A semaphore's refusal changes no state: it only needs k leases held at
// its instant. So a refusal legal at some instant of its interval in
// every timeline of the other ops is legal there once they are placed,
// and dropping it is exact (surelyRefused); and so is dropping one whose
// interval holds another refusal's whole interval (nestedRefusals): in
// any timeline, where the inner one took effect the outer one can too,
// at the same instant, right after it, in the same state.

// heldWithin is the most of the sorted spans (each open: a lease surely
// held strictly between from and to) that cover one instant of o's
// closed interval; longest is the longest span's length.
func heldWithin(spans []span, longest int64, o *permitOp) int {
	// A span covering an instant at or after o.call began after o.call - longest.
	i, _ := slices.BinarySearchFunc(spans, o.call-longest, func(s span, t int64) int { return cmp.Compare(s.from, t) })
	var edges []span // (instant, +1 at a start, -1 past an end)
	for _, sp := range spans[i:] {
		if sp.from >= o.ret {
			break
		}
		from, to := max(sp.from+1, o.call), min(sp.to-1, o.ret)
		if from <= to {
			edges = append(edges, span{from, 1}, span{to + 1, -1})
		}
	}
	slices.SortFunc(edges, func(a, b span) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	held, most := 0, 0
	for _, e := range edges {
		held += int(e.to)
		most = max(most, held)
	}
	return most
}

// longestSpan is the longest of spans, from start to end.
func longestSpan(spans []span) int64 {
	var l int64
	for _, sp := range spans {
		l = max(l, sp.to-sp.from)
	}
	return l
}

// nestedRefusals drops each definite refusal whose interval holds that
// of another refusal kept (of two alike, the later in ops goes), and says
// how many it dropped. For a semaphore's ops: any refusal's legality
// there is one count, k leases held.
func nestedRefusals(ops []*permitOp) ([]*permitOp, int) {
	refusal := func(*permitOp) bool { return true }
	return nestedWithin(ops, refusal, refusal)
}

// nestedWithin drops each definite refusal o with drops(o) whose
// interval holds that of a refusal kept with holds(it), and says how
// many it dropped. It is exact where an inner refusal that holds is
// legal only at instants the outer one is legal at too: the outer one
// then takes effect where the inner one did, right after it, in the same
// state, and it changes none. A chain of such drops ends on a refusal
// kept, so each is justified by one in what is left.
func nestedWithin(ops []*permitOp, drops, holds func(*permitOp) bool) ([]*permitOp, int) {
	var refusals []int // positions in ops
	for i, o := range ops {
		if o.f == history.Acquire && o.typ == history.Fail && (drops(o) || holds(o)) {
			refusals = append(refusals, i)
		}
	}
	// By call, latest first, then by return, earliest first: each holds
	// the interval of one seen before it iff some seen before returned no
	// later than it, the one that returned earliest among them kept.
	slices.SortStableFunc(refusals, func(a, b int) int {
		return cmp.Or(cmp.Compare(ops[b].call, ops[a].call), cmp.Compare(ops[a].ret, ops[b].ret))
	})
	drop := make([]bool, len(ops))
	earliest := int64(history.MaxTime)
	for _, i := range refusals {
		if drops(ops[i]) && ops[i].ret >= earliest {
			drop[i] = true
			continue
		}
		if holds(ops[i]) {
			earliest = min(earliest, ops[i].ret)
		}
	}
	out := ops[:0:0]
	for i, o := range ops {
		if !drop[i] {
			out = append(out, o)
		}
	}
	return out, len(ops) - len(out)
}
