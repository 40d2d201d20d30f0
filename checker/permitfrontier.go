package checker

import (
	"context"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// frontierCheck decides one segment (of permitCuts) piece by piece,
// carrying from piece to piece the exact states its timelines can be in;
// a piece too wide to enumerate hands the rest of the segment, from what
// was carried, to porcupine.
//
// A piece ends at each call c before which every op still in flight is
// an info op (one that may take effect up to its horizon), and few are
// (carriedMax). In every linearization, the ops placed before the first
// op called at c or later are: every op that returned before c (it
// precedes that op in real time), so every op but those info ops, and
// some of the info ops. So what a timeline can be at c is a set of those
// info ops already placed, and the states the placed ops lead to: a
// config. The configs at c are exactly those of every linearization of
// the pieces so far, and the next piece goes on from each, placing its
// ops and the info ops carried in any order the intervals allow. This
// needs no key free of leases (as a cut of permitCuts does: a semaphore
// whose k permits are never all free at once has none), only moments
// with nothing but a few info ops in flight; and it keeps memory to a
// piece's configs, where porcupine's grows with the square of the ops it
// searches at once (a hot key of 100,000 ops: 1.5 GB).
func frontierCheck(ctx context.Context, m permitModel, pm porcupine.Model, ops []*permitOp) porcupine.CheckResult {
	f := frontier{configs: map[uint64]permitSet{0: permitSet{}.add(initialPermits())}}
	pieces, ends := infoPieces(ops)
	for i, p := range pieces {
		if ctx.Err() != nil {
			return porcupine.Unknown
		}
		next, ok := m.advance(ctx, f, p, ends[i])
		if !ok {
			if ctx.Err() != nil {
				return porcupine.Unknown
			}
			return porcupineFrom(ctx, pm, f, slices.Concat(pieces[i:]...))
		}
		if len(next.configs) == 0 {
			return porcupine.Illegal
		}
		f = next
	}
	return porcupine.Ok
}

// frontier is what is carried at a piece's end: the info ops still in
// flight, and for each set of them already placed (bits over open), the
// states.
type frontier struct {
	open    []*permitOp
	configs map[uint64]permitSet
}

// porcupineFrom runs porcupine on ops from each config of f (with the
// config's open info ops not yet placed): ok if one is.
func porcupineFrom(ctx context.Context, pm porcupine.Model, f frontier, ops []*permitOp) porcupine.CheckResult {
	verdict := porcupine.Illegal
	for mask, set := range f.configs {
		timeout, ok := remaining(ctx)
		if !ok {
			return porcupine.Unknown
		}
		rest := slices.Clone(ops)
		for j, o := range f.open {
			if mask&(1<<j) == 0 {
				rest = append(rest, o)
			}
		}
		pm.Init = func() any { return set }
		switch porcupine.CheckOperationsTimeout(pm, toPorcupinePermits(rest), timeout) {
		case porcupine.Ok:
			return porcupine.Ok
		case porcupine.Unknown:
			verdict = porcupine.Unknown
		}
	}
	if ctx.Err() != nil {
		return porcupine.Unknown
	}
	return verdict
}

// carriedMax is the most info ops a piece's end carries in flight.
const carriedMax = 32

// infoPieces splits ops, sorted by call, at each call c before which
// every op still in flight (its ret at c or later) is an info op, and at
// most carriedMax are; ends are the calls the pieces end at (the last
// ends at no call: inf).
func infoPieces(ops []*permitOp) (pieces [][]*permitOp, ends []int64) {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b *permitOp) int { return cmpInt(a.call, b.call) })
	maxRet, from := int64(-1), 0 // maxRet: over the ops not info
	var infos []int64            // the rets of info ops that may be in flight
	for i, o := range byCall {
		infos = slices.DeleteFunc(infos, func(r int64) bool { return r < o.call })
		if i > from && maxRet < o.call && len(infos) <= carriedMax && o.call > byCall[i-1].call {
			pieces, ends = append(pieces, byCall[from:i]), append(ends, o.call)
			from = i
		}
		if o.typ == history.Info {
			infos = append(infos, o.ret)
		} else {
			maxRet = max(maxRet, o.ret)
		}
	}
	return append(pieces, byCall[from:]), append(ends, inf)
}

// Bounds on what advance enumerates: a piece's ops with those carried
// (one bit each), and the configs it keeps (a variable: tests lower it,
// to send pieces to porcupine).
const frontierOps = 64

var frontierConfigs = 1 << 12

// advance places piece's ops and the info ops f carries, from each of f's
// configs, in every order, and returns the configs at end (the call the
// piece ends at): every op but an info op placed. An info op not placed
// by then either never took effect, which needs no place (if its ret is
// before end), or is carried on. So here an info op is only ever placed
// as taking effect; ok is false when the piece is too wide, or ctx ended
// (checked at each op placed, so that a wide piece stops when told).
func (m permitModel) advance(ctx context.Context, f frontier, piece []*permitOp, end int64) (frontier, bool) {
	local := append(slices.Clip(f.open), piece...)
	n := len(local)
	if n > frontierOps {
		return frontier{}, false
	}
	// before[j]: ops not info that returned before j's call, which must
	// precede it (a pruning: the instants' bounds would refuse the rest).
	before := make([]uint64, n)
	var must uint64
	for j, o := range local {
		for i, p := range local {
			if p.ret < o.call && p.typ != history.Info {
				before[j] |= 1 << i
			}
		}
		if o.typ != history.Info {
			must |= 1 << j
		}
	}
	final := map[uint64]permitSet{}
	level, total := f.configs, 0
	for len(level) > 0 {
		if ctx.Err() != nil {
			return frontier{}, false
		}
		next := map[uint64]permitSet{}
		for mask, s := range level {
			if ctx.Err() != nil {
				return frontier{}, false
			}
			if mask&must == must {
				final[mask] = union(final[mask], s)
			}
			for j := range n {
				if mask&(1<<j) != 0 || before[j]&^mask != 0 {
					continue
				}
				if to := m.placeSet(s, local[j]); len(to) > 0 {
					next[mask|1<<j] = union(next[mask|1<<j], to)
				}
			}
		}
		if total += len(next); total > frontierConfigs {
			return frontier{}, false
		}
		for mask, s := range next {
			next[mask] = s.merged(ctx)
		}
		level = next
	}
	return carry(ctx, local, final, end), true
}

// carry is the frontier at end: the info ops of local still in flight,
// not placed, and the configs re-keyed over them.
func carry(ctx context.Context, local []*permitOp, final map[uint64]permitSet, end int64) frontier {
	var out frontier
	var from []int // local index of each open op
	for j, o := range local {
		if o.typ == history.Info && o.ret >= end {
			out.open, from = append(out.open, o), append(from, j)
		}
	}
	out.configs = map[uint64]permitSet{}
	for mask, s := range final {
		var key uint64
		for q, j := range from {
			if mask&(1<<j) != 0 {
				key |= 1 << q
			}
		}
		out.configs[key] = union(out.configs[key], s)
	}
	for key, s := range out.configs {
		out.configs[key] = s.merged(ctx)
	}
	return out
}

// placeSet is stepSet with an info op taking effect (never having taken
// effect is advance's to account for).
func (m permitModel) placeSet(set permitSet, op *permitOp) permitSet {
	var next permitSet
	for _, x := range set {
		for _, n := range m.apply(x.s, op, op.typ != history.Fail) {
			next = next.add(n)
		}
	}
	return next
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
