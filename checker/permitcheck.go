package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// permitSet is a shape's state for porcupine: every state the ops so far
// can have led to, sorted by hash, none within another (dropping a state
// another admits all the timelines of changes no verdict). The powerset
// is written out rather than taken from porcupine.NondeterministicModel:
// its ToModel merges with pairwise Equal (quadratic in the states, and
// per step) and cannot drop subsumed states, which on a hot key with k
// undecided leases are most of them.
type permitSet []hashedPermit

type hashedPermit = hashed[permitState]

// add inserts s unless a member admits all it does, and drops the members
// s admits all of.
func (set permitSet) add(s permitState) permitSet { return addState(set, s) }

func (set permitSet) equal(o permitSet) bool {
	return slices.EqualFunc(set, o, func(a, b hashedPermit) bool { return a.h == b.h && a.s.equal(&b.s) })
}

func (set permitSet) hash() uint64 {
	var h uint64
	for _, x := range set {
		h = (h ^ x.h) * 0x9e3779b97f4a7c15
	}
	return h
}

// stepSet returns every state op can lead to from a member of set.
func (m permitModel) stepSet(set permitSet, op *permitOp) permitSet {
	var next permitSet
	for _, x := range set {
		for _, n := range m.step(x.s, op) {
			next = next.add(n)
		}
	}
	return next
}

// porcupine wraps the shape's model for porcupine, once, with typed inputs.
func (m permitModel) porcupine() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return permitSet{}.add(initialPermits()) },
		Step: func(state, input, _ any) (bool, any) {
			next := m.stepSet(state.(permitSet), input.(*permitOp))
			return len(next) > 0, next
		},
		Equal:             func(a, b any) bool { return a.(permitSet).equal(b.(permitSet)) },
		Hash:              func(state any) uint64 { return state.(permitSet).hash() },
		DescribeOperation: func(input, _ any) string { return input.(*permitOp).String() },
		DescribeState: func(state any) string {
			var parts []string
			for _, x := range state.(permitSet) {
				parts = append(parts, x.s.String())
			}
			return strings.Join(parts, " or ")
		},
	}
}

func (op *permitOp) String() string {
	s := fmt.Sprintf("p%d %s %s %s", op.process, op.f, op.typ, short(op.token))
	if op.f == history.Acquire && op.write {
		s += " (write)"
	}
	if op.f != history.Release {
		s += " ttl " + time.Duration(op.ttl).String()
	}
	return s
}

func (s permitState) String() string {
	if len(s.leases) == 0 {
		return "none held"
	}
	var parts []string
	for j, l := range s.leases {
		lo, hi := -s.at(pZero, pFirst+j), s.at(pFirst+j, pZero)
		w := ""
		if l.write {
			w = " (write)"
		}
		parts = append(parts, fmt.Sprintf("%s%s expires in [%s, %s]", short(l.token), w, history.Seconds(lo+l.d), seconds(addBound(hi, l.d))))
	}
	return "maybe held: " + strings.Join(parts, ", ")
}

// checkPermits decides one key's ops under m, segment by segment
// (permitCuts), each by frontierCheck: illegal if a segment is, unknown
// if one ran out of time (or ctx ended) and none is illegal, or if a
// state had more leases possibly held than the model judges (so m is
// made afresh for each key: newPermitModel).
func checkPermits(ctx context.Context, m permitModel, ops []*permitOp) porcupine.CheckResult {
	pm := stopOnDone(ctx, m.porcupine())
	verdict := porcupine.Ok
	for _, seg := range permitCuts(ops, m.eps) {
		switch frontierCheck(ctx, m, pm, seg) {
		case porcupine.Illegal:
			if ctx.Err() != nil || m.primes.tooMany.Load() {
				return porcupine.Unknown
			}
			return porcupine.Illegal
		case porcupine.Unknown:
			verdict = porcupine.Unknown
		}
	}
	if ctx.Err() != nil || m.primes.tooMany.Load() {
		return porcupine.Unknown
	}
	return verdict
}

func toPorcupinePermits(ops []*permitOp) []porcupine.Operation {
	lane := map[int]int{}
	pops := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		id, ok := lane[o.process]
		if !ok {
			id = len(lane)
			lane[o.process] = id
		}
		pops[i] = porcupine.Operation{ClientId: id, Input: o, Call: o.call, Return: o.ret}
	}
	return pops
}

// toPermitOps converts one key's ops for a shape's model, as toLockOps
// does for the mutex's: intervals widened by clock bounds, info ops up to
// the horizon, token-less info acquires given a lease of their own. Under
// writer preference (writerPref), a definite read refusal also gets the
// spans where a write acquire of the key was in flight (its interval, as
// the model takes it).
func toPermitOps(ops []*history.Op, horizon int64, writerPref bool) []*permitOp {
	out := make([]*permitOp, 0, len(ops))
	var writers [][2]int64
	for _, op := range ops {
		b := op.ClockBound
		po := &permitOp{index: op.Index, process: op.Process, f: op.F, typ: op.Type, token: op.Token,
			ttl: int64(op.TTL()), add: op.Mode == history.ExtendAdd, write: op.Access == history.AccessWrite,
			call: effectFrom(op), ret: op.Latest(horizon) + b, orig: op.Return + b}
		if op.Type == history.Info && po.token == "" {
			po.token = ownToken(op.Index)
		}
		if po.f == history.Acquire && po.write {
			writers = append(writers, [2]int64{po.call, po.ret})
		}
		out = append(out, po)
	}
	if writerPref {
		union := unionSpans(writers)
		for _, po := range out {
			if po.f == history.Acquire && po.typ == history.Fail && !po.write {
				po.busy = spansWithin(union, po.call, po.ret)
			}
		}
	}
	return out
}

// unionSpans is the union of closed spans, as disjoint spans in order.
func unionSpans(spans [][2]int64) [][2]int64 {
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]int64
	for _, s := range spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// spansWithin is union (disjoint, in order) cut to [from, to].
func spansWithin(union [][2]int64, from, to int64) [][2]int64 {
	i, _ := slices.BinarySearchFunc(union, from, func(s [2]int64, t int64) int { return cmp.Compare(s[1], t) })
	var out [][2]int64
	for ; i < len(union) && union[i][0] <= to; i++ {
		out = append(out, [2]int64{max(union[i][0], from), min(union[i][1], to)})
	}
	return out
}
