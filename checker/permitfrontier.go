package checker

import (
	"context"
	"slices"

	"github.com/anishathalye/porcupine"
)

// frontierCheck decides one segment (of permitCuts) piece by piece,
// carrying the exact set of states from piece to piece; a piece too wide
// to enumerate hands the rest of the segment, from the states carried so
// far, to porcupine.
//
// A piece ends at every instant c that no op's interval reaches (each op
// returned, an info op could take effect, before c, or was called after
// it): in every timeline the ops before c take effect before those after
// it, so the states a timeline can be in at c are exactly the states
// every linearization of the pieces so far ends in, from which the next
// piece goes on. Unlike a cut of permitCuts this needs no key free of
// leases (a semaphore whose k permits are never all free at once has
// none), only a moment with nothing in flight; and it keeps memory to a
// piece's linearizations instead of porcupine's, quadratic in the ops it
// searches at once (a hot key of 100,000 ops took 2.5 GB).
func frontierCheck(ctx context.Context, m permitModel, pm porcupine.Model, ops []*permitOp) porcupine.CheckResult {
	set := permitSet{}.add(initialPermits())
	pieces := quiescentPieces(ops)
	for i, p := range pieces {
		if ctx.Err() != nil {
			return porcupine.Unknown
		}
		next, ok := m.endStates(set, p)
		if !ok {
			return porcupineFrom(ctx, pm, set, slices.Concat(pieces[i:]...))
		}
		if len(next) == 0 {
			return porcupine.Illegal
		}
		set = next
	}
	return porcupine.Ok
}

// porcupineFrom runs porcupine on ops from the states init.
func porcupineFrom(ctx context.Context, pm porcupine.Model, init permitSet, ops []*permitOp) porcupine.CheckResult {
	timeout, ok := remaining(ctx)
	if !ok {
		return porcupine.Unknown
	}
	pm.Init = func() any { return init }
	r := porcupine.CheckOperationsTimeout(pm, toPorcupinePermits(ops), timeout)
	if ctx.Err() != nil {
		return porcupine.Unknown
	}
	return r
}

// quiescentPieces splits ops, sorted by call, where nothing is in flight.
func quiescentPieces(ops []*permitOp) [][]*permitOp {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b *permitOp) int { return cmpInt(a.call, b.call) })
	var pieces [][]*permitOp
	maxRet, from := int64(-1), 0
	for i, o := range byCall {
		if i > from && maxRet < o.call {
			pieces = append(pieces, byCall[from:i])
			from = i
		}
		maxRet = max(maxRet, o.ret)
	}
	return append(pieces, byCall[from:])
}

// Bounds on what endStates enumerates: a piece's ops (one bit each), and
// the sets of them linearized first that it keeps at once (a variable:
// tests lower it, to send pieces to porcupine).
const frontierOps = 64

var frontierConfigs = 1 << 12

// endStates returns every state linearizing piece (sorted by call) can end
// in from a state of set; ok is false when the piece is too wide to
// enumerate. It goes level by level over which ops are linearized: an op
// may go next once every op that returned before its call has gone.
func (m permitModel) endStates(set permitSet, piece []*permitOp) (permitSet, bool) {
	n := len(piece)
	if n > frontierOps {
		return nil, false
	}
	before := make([]uint64, n) // the ops that must precede each
	for j, o := range piece {
		for i, p := range piece {
			if p.ret < o.call {
				before[j] |= 1 << i
			}
		}
	}
	level := map[uint64]permitSet{0: set}
	for range n {
		next := map[uint64]permitSet{}
		for mask, s := range level {
			for j := range n {
				if mask&(1<<j) != 0 || before[j]&^mask != 0 {
					continue
				}
				if to := m.stepSet(s, piece[j]); len(to) > 0 {
					next[mask|1<<j] = union(next[mask|1<<j], to)
				}
			}
		}
		if len(next) > frontierConfigs {
			return nil, false
		}
		level = next
	}
	return level[1<<n-1], true
}

// union is a with b's states added.
func union(a, b permitSet) permitSet {
	if a == nil {
		return b
	}
	for _, x := range b {
		a = a.add(x.s)
	}
	return a
}
