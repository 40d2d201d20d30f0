package checker

import (
	"slices"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// Covering failed acquires. A failed acquire needs a holder at its
// instant; on a key where Redis stalled, the holder is often one of many
// orphan info acquires (an acquire whose reply was lost, whose token no
// other op names): when Redis resumes, the queued SET NXs run, one wins
// and holds the key for its TTL, the rest fail. Which orphan won does not
// matter to any other op, so rather than let porcupine try each of dozens
// of orphans in every order (it needs gigabytes for 30), the checker
// decides such keys in two steps that each need no search over orphans:
//
//   - uncoveredFail refutes a key with a failed acquire that no lease at
//     all can hold the key for: interval reasoning over every token's
//     possible holding window (reduction 1b in reduce.go);
//   - cover proves a key valid by inserting orphans, greedily, into a
//     concrete timeline of the other ops where failed acquires lack a
//     holder (reduction 5b); the result is re-checked with numbers
//     (settle), so a witness never rests on the greedy choice.

// holdWindow is when a token's lease can hold the key, at the widest:
// from the earliest call of its acquires to the latest instant it can
// still be held (its reach plus eps), or its first ok release's return
// if it has one acquire.
type holdWindow struct{ from, to int64 }

// holdWindows returns every acquired token's window. A lease is set by an
// acquire of its token that took effect, so no earlier than the earliest
// call of one; it is held at t only if t <= E + eps, and E is at most the
// reach of its setters and additive extends, whatever their order
// (reach). A token acquired once that has an ok release is free after
// that release's instant (the release needed the lease, so it came after
// the acquire) and nothing can set it again.
func holdWindows(m leaseModel, lops []*lockOp) []holdWindow {
	type tok struct {
		acquires int
		from     int64
		released int64
	}
	toks := map[string]*tok{}
	r := newReach()
	for _, lo := range lops {
		if lo.typ == history.Fail && lo.f == history.Acquire {
			continue
		}
		t := toks[lo.token]
		if t == nil {
			t = &tok{from: inf, released: inf}
			toks[lo.token] = t
		}
		switch {
		case lo.f == history.Acquire:
			t.acquires++
			t.from = min(t.from, lo.call)
			r.see(lo.token, false, lo.ret, lo.ttl)
		case lo.f == history.Extend && lo.typ != history.Fail:
			r.see(lo.token, lo.add, lo.ret, lo.ttl)
		case lo.f == history.Release && lo.typ == history.OK:
			t.released = min(t.released, lo.ret)
		}
	}
	var out []holdWindow
	for token, t := range toks {
		if t.acquires == 0 {
			continue // never acquired: it never holds the key
		}
		to := addBound(min(r.set[token]+r.add[token], maxD), m.eps)
		if t.acquires == 1 {
			to = min(to, t.released)
		}
		out = append(out, holdWindow{t.from, to})
	}
	return out
}

// uncoveredFail returns a failed acquire whose interval meets no token's
// hold window, or nil: no timeline has a holder at its instant, so none
// admits it. O(n log n).
func uncoveredFail(m leaseModel, lops []*lockOp) *lockOp {
	ws := holdWindows(m, lops)
	var fails []*lockOp
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ == history.Fail {
			fails = append(fails, lo)
		}
	}
	slices.SortFunc(ws, func(a, b holdWindow) int { return cmpInt(a.from, b.from) })
	slices.SortFunc(fails, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	// reach is the latest end of the windows that start by the fail's
	// return: one of them meets the fail's interval iff it ends at or
	// after the fail's call.
	reach, k := int64(-inf), 0
	for _, f := range fails {
		for ; k < len(ws) && ws[k].from <= f.ret; k++ {
			reach = max(reach, ws[k].to)
		}
		if reach < f.call {
			return f
		}
	}
	return nil
}

// orphansOf splits rest into its orphan info acquires (whose token no
// other op of rest names) and the others.
func orphansOf(rest []*lockOp) (bare, orphans []*lockOp) {
	named := map[string]int{}
	for _, lo := range rest {
		named[lo.token]++
	}
	bare = make([]*lockOp, 0, len(rest))
	for _, lo := range rest {
		if lo.f == history.Acquire && lo.typ == history.Info && named[lo.token] == 1 {
			orphans = append(orphans, lo)
		} else {
			bare = append(bare, lo)
		}
	}
	return bare, orphans
}

// dropSurplusOrphans keeps of each class of interchangeable orphans (the
// same interval and TTL) only as many as can take effect: two of a class
// that both took effect are at least TTL - eps apart (the first's lease is
// never released, so the second needs it, or a lease set after it, gone),
// so at most (ret - call) / (TTL - eps) + 1 did. The others did not take
// effect in any timeline of the whole, or can be swapped with one that
// did not (their tokens are named by nothing), and an info op that did not
// take effect changes nothing: dropping them is exact.
func dropSurplusOrphans(m leaseModel, lops []*lockOp) []*lockOp {
	_, orphans := orphansOf(lops)
	if len(orphans) < 2 {
		return lops
	}
	type class struct{ call, ret, ttl int64 }
	kept := map[class]int64{}
	drop := map[*lockOp]bool{}
	for _, o := range orphans {
		c := class{o.call, o.ret, o.ttl}
		limit := int64(len(orphans))
		if o.ttl > m.eps {
			limit = (o.ret-o.call)/(o.ttl-m.eps) + 1
		}
		if kept[c] >= limit {
			drop[o] = true
			continue
		}
		kept[c]++
	}
	if len(drop) == 0 {
		return lops
	}
	out := make([]*lockOp, 0, len(lops)-len(drop))
	for _, lo := range lops {
		if !drop[lo] {
			out = append(out, lo)
		}
	}
	return out
}

// event is one op of a concrete timeline: the instant it took effect at,
// and the lease after it (holder "" when free, e its expiry).
type event struct {
	op     *lockOp
	at     int64
	holder string
	e      int64
}

// settle fills in each event's lease, replaying the timeline with numbers
// as the semantics states it, and reports whether it is a timeline: each
// instant inside its op's interval and none before the one before it,
// each op legal at its instant.
func (m leaseModel) settle(evs []event) bool {
	holder, e, last := "", int64(0), int64(-inf)
	for k := range evs {
		op, at := evs[k].op, evs[k].at
		if at < op.call || at > op.ret || at < last {
			return false
		}
		last = at
		mine := holder != "" && holder == op.token
		switch ok := op.typ != history.Fail; {
		case op.f == history.Acquire && ok:
			if holder != "" && at < e-m.eps {
				return false
			}
			holder, e = op.token, at+op.ttl
		case op.f == history.Acquire:
			if holder == "" || at > e+m.eps {
				return false
			}
		case ok:
			if !mine || at > e+m.eps {
				return false
			}
			switch {
			case op.f == history.Release:
				holder = ""
			case op.add:
				e += op.ttl
			default:
				e = at + op.ttl
			}
		case mine:
			if at < e-m.eps {
				return false
			}
			holder = ""
		}
		evs[k].holder, evs[k].e = holder, e
	}
	return true
}

// span is a stretch of instants in which the key is held and not
// certainly gone.
type span struct{ from, to int64 }

// heldSpans returns, in order, the spans of evs in which a failed acquire
// is legal: from one event's instant to the next one's, cut at expiry +
// eps.
func (m leaseModel) heldSpans(evs []event) []span {
	var held []span
	for k, ev := range evs {
		if ev.holder == "" {
			continue
		}
		next := inf
		if k+1 < len(evs) {
			next = evs[k+1].at
		}
		if to := min(next, addBound(ev.e, m.eps)); to >= ev.at {
			held = append(held, span{ev.at, to})
		}
	}
	return held
}

// fits reports whether failed acquire f has an instant in one of held.
func fits(held []span, f *lockOp) bool {
	i, _ := slices.BinarySearchFunc(held, f.call, func(sp span, c int64) int { return cmpInt(sp.to, c) })
	return i < len(held) && held[i].from <= f.ret
}

// misfits returns the failed acquires of fails that fit nowhere in evs.
func (m leaseModel) misfits(evs []event, fails []*lockOp) []*lockOp {
	held := m.heldSpans(evs)
	var out []*lockOp
	for _, f := range fails {
		if !fits(held, f) {
			out = append(out, f)
		}
	}
	return out
}

// cover inserts orphans of orphans into the timeline evs where failed
// acquires of fails find no holder, and returns the new timeline and the
// failed acquires that still fit nowhere. Greedy: the misfits in order of
// return, each given the latest instant it allows in the latest gap that
// can take one, from the orphan that can take effect there with the
// earliest deadline (as in matching points to intervals, the one least
// useful later). Each insertion is kept only if the timeline still
// settles, so the greedy choice can miss a witness but never make one up.
func (m leaseModel) cover(evs []event, fails, orphans []*lockOp) ([]event, []*lockOp) {
	left := m.misfits(evs, fails)
	if len(left) == 0 || len(orphans) == 0 {
		return evs, left
	}
	slices.SortStableFunc(left, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	pool := slices.Clone(orphans)
	slices.SortStableFunc(pool, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	var rest []*lockOp
	held := m.heldSpans(evs)
	for _, f := range left {
		if fits(held, f) {
			continue
		}
		k, u, o := m.slot(evs, f, pool)
		if o < 0 {
			rest = append(rest, f)
			continue
		}
		next := slices.Insert(slices.Clone(evs), k, event{op: pool[o], at: u})
		if !m.settle(next) {
			rest = append(rest, f)
			continue
		}
		if h := m.heldSpans(next); fits(h, f) {
			evs, held = next, h
			pool = slices.Delete(pool, o, o+1)
		} else {
			rest = append(rest, f)
		}
	}
	return evs, rest
}

// slot finds where an orphan of pool can take effect so that f has a
// holder: the gap before evs[k], the instant u, and the orphan's index in
// pool (-1 if none). In the gap the key must be free or its lease may be
// gone (u >= E - eps); until the next acquire that took effect no op may
// need the old lease (an ok release or extend), and that acquire must
// find the orphan's lease may be gone.
func (m leaseModel) slot(evs []event, f *lockOp, pool []*lockOp) (k int, u int64, o int) {
	sets := func(ev event) bool { return ev.op.f == history.Acquire && ev.op.typ != history.Fail }
	needs := func(ev event) bool { return ev.op.f != history.Acquire && ev.op.typ != history.Fail }
	// The first gap whose start is after f's return holds no instant
	// <= f.ret; go back from there.
	hiK := sort.Search(len(evs), func(i int) bool { return evs[i].at > f.ret })
	nextSet := hiK
	for ; nextSet < len(evs) && !sets(evs[nextSet]); nextSet++ {
		if needs(evs[nextSet]) {
			return 0, 0, -1
		}
	}
	reach := maxOrphanTTL(pool) + m.eps
	for k := hiK; k >= 0; k-- {
		if k < hiK {
			switch {
			case sets(evs[k]):
				nextSet = k
			case needs(evs[k]):
				return 0, 0, -1
			}
		}
		lo, hi := int64(-inf), int64(inf)
		if k > 0 {
			prev := evs[k-1]
			lo = prev.at
			if prev.holder != "" {
				lo = max(lo, prev.e-m.eps)
			}
		}
		if k < len(evs) {
			hi = evs[k].at
		}
		if hi < f.call-reach {
			return 0, 0, -1
		}
		for i, p := range pool {
			h := min(hi, f.ret, p.ret)
			if nextSet < len(evs) {
				h = min(h, evs[nextSet].at-p.ttl+m.eps)
			}
			if l := max(lo, p.call, f.call-p.ttl-m.eps); l <= h {
				return k, h, i
			}
		}
	}
	return 0, 0, -1
}

func maxOrphanTTL(pool []*lockOp) int64 {
	var d int64
	for _, p := range pool {
		d = max(d, p.ttl)
	}
	return d
}
