package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Two holders for certain (reduction 1d in reduce.go). A lease X whose
// token has one acquire, ok, holds the key from that acquire's instant s
// (s <= its return) without a break until:
//
//   - its ok release's instant, if it has one: the release needs X to be
//     the holder, X's token is set by no other acquire, and once X lost
//     the key nothing gives it back, so X held it all along (its instant
//     is at least the release's call);
//   - else, if it has no extend and no release that may have taken effect
//     (ok or info), E - eps = s + ttl - eps at least: an acquire of
//     another token is legal while X holds the key only from E - eps, and
//     X frees it itself only by a release that fails, legal while X holds
//     it only from E - eps too.
//
// So X certainly holds the key over the open interval from its acquire's
// return to its release's call (or to its acquire's call + ttl - eps). An
// ok acquire of another token whose whole interval lies inside took
// effect there (after s, so after X's acquire in any order) and found the
// key held: no timeline admits it. The check is O(n log n), needs no
// order, and decides the keys whose ops are too slow for porcupine to
// refute (ops that reach many TTLs either side, where a lease that never
// ends, or outlives its release by seconds, still shows).

// guard is the open interval over which a lease certainly holds its key.
type guard struct {
	from, to int64
	acq, rel *lockOp // rel: the release that ends it, if one does
}

// guards returns the leases' guards that are not empty.
func guards(m leaseModel, lops []*lockOp) []guard {
	type tok struct {
		acq              *lockOp
		acquires, extend int
		releases, mayRel int // ok releases; releases that may have taken effect
		rel              *lockOp
	}
	toks := map[string]*tok{}
	for _, lo := range lops {
		if lo.typ == history.Fail && lo.f == history.Acquire {
			continue
		}
		t := toks[lo.token]
		if t == nil {
			t = &tok{}
			toks[lo.token] = t
		}
		switch lo.f {
		case history.Acquire:
			t.acquires++
			t.acq = lo
		case history.Extend:
			t.extend++
		case history.Release:
			t.mayRel++
			if lo.typ == history.OK {
				t.releases++
				t.rel = lo
			}
		}
	}
	var out []guard
	for _, t := range toks {
		if t.acquires != 1 || t.acq.typ != history.OK || t.releases > 1 {
			continue
		}
		g := guard{from: t.acq.ret, acq: t.acq}
		switch {
		case t.releases == 1:
			g.to, g.rel = t.rel.call, t.rel
		case t.extend == 0 && t.mayRel == 0:
			g.to = t.acq.call + t.acq.ttl - m.eps
		default:
			continue
		}
		if g.from < g.to {
			out = append(out, g)
		}
	}
	return out
}

// certainOverlap returns an ok acquire whose interval lies inside another
// lease's guard, and that guard; nil if there is none.
func certainOverlap(m leaseModel, lops []*lockOp) (*lockOp, guard) {
	gs := guards(m, lops)
	if len(gs) == 0 {
		return nil, guard{}
	}
	var acqs []*lockOp
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ == history.OK {
			acqs = append(acqs, lo)
		}
	}
	slices.SortFunc(gs, func(a, b guard) int { return cmpInt(a.from, b.from) })
	slices.SortFunc(acqs, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	// best is the guard reaching furthest of those that began before the
	// acquire's call; an acquire's own guard begins at its return, so it
	// is never among them.
	best, k := guard{to: -inf}, 0
	for _, y := range acqs {
		for ; k < len(gs) && gs[k].from < y.call; k++ {
			if gs[k].to > best.to {
				best = gs[k]
			}
		}
		if y.ret < best.to {
			return y, best
		}
	}
	return nil, guard{}
}

// overlap explains the acquire y that certainOverlap found inside g.
func (c *keyCheck) overlap(key string, y *lockOp, g guard) *Violation {
	x, released := g.acq, g.rel != nil
	// Explained and drawn from the proof's own ops: they are invalid by
	// themselves (the argument above), and a search over them is
	// instant, where one over every op that meets the proof's span (a
	// key whose ops reach ten TTLs) ran its whole second and found no
	// failure point to show.
	proof := []*lockOp{x, y}
	if released {
		proof = append(proof, g.rel)
	}
	slices.SortFunc(proof, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	v := c.violation(key, proof)
	v.Window = [2]int64{x.call, y.orig}
	who := fmt.Sprintf("p%d acquire ok at %s", y.process, history.Seconds(y.orig))
	holder := fmt.Sprintf("p%d's lease %s (acquired %s, ttl %v)", x.process, short(x.token), history.Seconds(x.call), time.Duration(x.ttl))
	if released {
		v.Message = fmt.Sprintf("%s: %s while %s still held the key: its own release, called %s, came after whatever the order: two holders at once",
			key, who, holder, history.Seconds(g.to))
	} else {
		v.Message = fmt.Sprintf("%s: %s while %s could not yet have expired (earliest expiry %s, tolerance %v; never released or extended): two holders at once",
			key, who, holder, history.Seconds(x.call+x.ttl), time.Duration(c.m.eps))
	}
	v.Ops = []int64{x.index, y.index}
	if released {
		v.Ops = append(v.Ops, g.rel.index)
	}
	return v
}

// unownedRelease returns an ok release or extend of lops whose token no
// acquire that may take effect (ok or indeterminate) names, or nil. No
// timeline makes it legal: it needs its token to hold the key, and only
// an acquire of that token makes it the holder.
func unownedRelease(lops []*lockOp) *lockOp {
	owned := map[string]bool{}
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ != history.Fail {
			owned[lo.token] = true
		}
	}
	for _, lo := range lops {
		if (lo.f == history.Release || lo.f == history.Extend) && lo.typ == history.OK && !owned[lo.token] {
			return lo
		}
	}
	return nil
}
