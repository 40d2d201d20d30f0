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
// call of one; it is held at t only if t <= E + eps, and E is at most
// tokenReach of its setters and extends, whatever their order. A token
// acquired once that has an ok release is free after that release's
// instant (the release needed the lease, so it came after the acquire)
// and nothing can set it again.
func holdWindows(m leaseModel, lops []*lockOp) []holdWindow {
	type tok struct {
		acquires int
		from     int64
		released int64
		setters  []*lockOp // acquires and extends that may have taken effect
	}
	toks := map[string]*tok{}
	var order []string
	for _, lo := range lops {
		if lo.typ == history.Fail && lo.f == history.Acquire {
			continue
		}
		t := toks[lo.token]
		if t == nil {
			t = &tok{from: inf, released: inf}
			toks[lo.token] = t
			order = append(order, lo.token)
		}
		switch {
		case lo.f == history.Acquire:
			t.acquires++
			t.from = min(t.from, lo.call)
			t.setters = append(t.setters, lo)
		case lo.f == history.Extend && lo.typ != history.Fail:
			t.setters = append(t.setters, lo)
		case lo.f == history.Release && lo.typ == history.OK:
			t.released = min(t.released, lo.ret)
		}
	}
	var out []holdWindow
	for _, token := range order {
		t := toks[token]
		if t.acquires == 0 {
			continue // never acquired: it never holds the key
		}
		to := addBound(tokenReach(m, t.setters), m.eps)
		if t.acquires == 1 {
			to = min(to, t.released)
		}
		if len(t.setters) == 1 && len(t.setters[0].gaps) > 0 {
			// An orphan narrowed with gaps: each open stretch holds the
			// key from its start to its end's reach.
			o := t.setters[0]
			for _, sg := range o.segments() {
				out = append(out, holdWindow{sg[0], min(to, addBound(sg[1], o.ttl+m.eps))})
			}
			continue
		}
		out = append(out, holdWindow{t.from, to})
	}
	return out
}

// tokenReach bounds the expiry of one token's lease, whatever the order
// its setters (acquires and extends that may have taken effect) took
// effect in. reach lets a replacing extend take effect as late as it
// returned, lease or no lease; but it needs the lease held, t <= E + eps:
// an indeterminate watchdog extend stuck behind a stalled Redis cannot
// stretch its lease by the seconds of its horizon. The bound:
//
//   - acquires set E = t + ttl, t <= ret: base = the largest ret + ttl;
//     additive extends add at most add = the sum of their TTLs, wherever
//     they fall;
//   - a replacing extend x sets E = t + ttl_x with t <= ret_x and
//     t <= E' + eps, E' the expiry before it, so E <= min(R_x, v + d)
//     where R_x = ret_x + ttl_x, v bounds the setters' part of E' and
//     d = add + eps + C, C the largest TTL of these extends; and it can
//     take effect at all only if call_x <= v + add + eps;
//   - each extend takes effect once, and applying v -> max(v, min(R, v +
//     d)) in ascending R gives the largest result of any order (for two,
//     the smaller R first never gives less), so the bound is that over
//     every extend that some order lets find its lease held. Those are
//     found by passes that only add extends as v grows: one usable in a
//     real timeline is usable here, by induction on that timeline.
func tokenReach(m leaseModel, setters []*lockOp) int64 {
	base, add, c := int64(-inf), int64(0), int64(0)
	var replacing []*lockOp
	for _, lo := range setters {
		switch {
		case lo.f == history.Acquire:
			base = max(base, lo.ret+lo.ttl)
		case lo.add:
			add = min(add+lo.ttl, maxD)
		default:
			replacing = append(replacing, lo)
			c = max(c, lo.ttl)
		}
	}
	if base <= -inf {
		return -inf // extends of a lease never acquired hold nothing
	}
	slices.SortFunc(replacing, func(a, b *lockOp) int { return cmpInt(a.ret+a.ttl, b.ret+b.ttl) })
	d := min(add+m.eps+c, maxD)
	used := make([]bool, len(replacing))
	apply := func() int64 {
		v := base
		for i, x := range replacing {
			if used[i] {
				v = max(v, min(x.ret+x.ttl, addBound(v, d)))
			}
		}
		return v
	}
	v := base
	for changed := true; changed; {
		changed = false
		for i, x := range replacing {
			if !used[i] && x.call <= addBound(v, add+m.eps) {
				used[i], changed = true, true
			}
		}
		v = apply()
	}
	return min(addBound(v, add), maxD)
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

// orphanShortfall refutes a key whose refusals, where no other lease can
// hold the key, need more orphan leases than there are orphans that could
// have taken effect there (reduction 1e in reduce.go): a Redis stalled
// again and again leaves a stuck key whose every refusal one orphan or
// another could cover, but not all of them together.
//
// The argument. A failed acquire needs a holder at its instant. Where its
// interval meets no hold window of a lease that is not an orphan
// (holdWindows), that holder is an orphan's lease: an orphan o took
// effect at some s in [call_o, ret_o] (ret: up to its horizon) and can be
// seen as the holder only within [s, s + ttl_o + eps]. An orphan takes
// effect at most once, so its lease is one interval of length at most
// L = the longest orphan TTL + eps. Take any run of such refusals (i..j
// in the order of their returns): the leases that hold the key at their
// instants are distinct orphans, each of which can meet one of them (its
// call no later than the run's last return, its ret + ttl + eps no
// earlier than the run's earliest call); and at least g of them are
// needed, g the fewest intervals of length L that meet every refusal of
// the run (the greedy that places each at the earliest uncovered
// refusal's return is exact: any interval meeting that refusal starts by
// its return, so covers no later refusal this one misses). If g exceeds
// the orphans that could meet the run, no timeline has a holder at every
// instant: sound, with no order searched.
//
// Nor if g exceeds how many orphans' leases fit one after another where
// they could meet the run: two orphans that both took effect are at least
// the shorter TTL - eps apart (the later needs the earlier's lease gone,
// and nothing but its expiry ends an orphan's lease), and each took effect
// within its open stretches (narrowOrphans) at an s with s <= the run's
// last return and s + ttl + eps >= its earliest call. So with S and F the
// earliest and the latest such s of any orphan, and T the shortest TTL
// among them, at most 1 + (F - S) / (T - eps) took effect there. A master
// restarted empty under a held lease, then holding the key for grants no
// replica acknowledged until another client's grant, gives such a run:
// the held lease closes the stretch before S, the grant the one after F
// (checker/testdata/wait-all-kill-none-chain.jsonl). O(n^2 m) for n such
// refusals and m orphans, skipped above maxShortfallWork.
func orphanShortfall(m leaseModel, lops []*lockOp) (f *lockOp, need, have int) {
	rest, fails := splitFails(lops)
	bare, orphans := orphansOf(rest)
	if len(orphans) == 0 || len(fails) == 0 {
		return nil, 0, 0
	}
	ws := holdWindows(m, bare)
	slices.SortFunc(ws, func(a, b holdWindow) int { return cmpInt(a.from, b.from) })
	slices.SortFunc(fails, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	needed := unmet(ws, fails)
	n := len(needed)
	if n == 0 || n*n*len(orphans) > maxShortfallWork {
		return nil, 0, 0
	}
	L := maxOrphanTTL(orphans) + m.eps
	for i := range needed {
		g, covEnd, minCall, maxRet := 0, int64(-inf), needed[i].call, int64(-inf)
		for j := i; j < n; j++ {
			r := needed[j]
			minCall, maxRet = min(minCall, r.call), max(maxRet, r.ret)
			if r.call > covEnd {
				g++
				covEnd = r.ret + L
			}
			avail, S, F, T := 0, int64(inf), int64(-inf), int64(inf)
			for _, o := range orphans {
				met := false
				for _, sg := range o.segments() {
					// The instants s of this stretch at which o could
					// meet the run.
					from, to := max(sg[0], minCall-o.ttl-m.eps), min(sg[1], maxRet)
					if from <= to {
						met = true
						S, F = min(S, from), max(F, to)
					}
				}
				if met {
					avail++
					T = min(T, o.ttl)
				}
			}
			have := avail
			if avail > 0 && T > m.eps {
				have = int(min(int64(avail), 1+(F-S)/(T-m.eps)))
			}
			if g > have {
				return r, g, have
			}
		}
	}
	return nil, 0, 0
}

// unmet returns the refusals of fails (by return) that no window of ws
// (by start) meets: those that only an orphan could give a holder.
func unmet(ws []holdWindow, fails []*lockOp) []*lockOp {
	var needed []*lockOp
	reach, k := int64(-inf), 0
	for _, f := range fails {
		for ; k < len(ws) && ws[k].from <= f.ret; k++ {
			reach = max(reach, ws[k].to)
		}
		if reach < f.call {
			needed = append(needed, f)
		}
	}
	return needed
}

// maxShortfallWork bounds orphanShortfall's n^2 m.
const maxShortfallWork = 200_000_000
