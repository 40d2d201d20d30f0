package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// A blocking acquire (wait_ms > 0) was starved if, for longer than its
// lock's wake-up bound (wake_ms), its key certainly had a free permit
// while it waited (DESIGN "Blocking waits"): fewer than k leases of
// other tokens possibly held at every instant of that span. A lease is
// possibly held over [from, to] (possiblyHeld): from the earliest call
// of an ok or info acquire of its token (the grant is no earlier; and,
// for a lease no extend may have set, no earlier than an ok release's
// call less its TTL and eps, as the release found it held) to the
// earliest of its latest expiry (reach: the latest effect of each
// acquire and extend that may have happened, plus its TTL, additive ones
// summed, plus eps) and the latest effect of an ok release. In every
// timeline of the lease model a held lease lies inside that span, so a
// span outside k of them is free in every timeline: a lock whose
// waiters wake within their bound is never flagged, whatever else the
// history holds. (The span is coarser than the model, never finer: it
// ignores what a refusal or a failed release proves, so it may miss a
// starved waiter, never invent one.)
//
// A waiter is judged only outside the fault windows (stallSpans): while
// Redis is paused, down or cut off, or the waiter's own client is
// stopped, no lock can take a free key, however soon it would wake, so a
// span in a fault's window is not free. The one fault that is not left
// out is the one that makes a lock's waiters starve by its own doing,
// drop-unlock (WakeFault): an unlock message lost while they wait. The
// check stays never finer than the model: it only judges fewer spans.
//
// A waiter certainly waited over its window (waitWindow): an ok one
// from its call to when its lock sent the try that took the key
// (history.Op.Tried: the grant was no earlier); a refused one from its
// call until its wait ran out (the lock gives up no earlier). An
// indeterminate one, or an ok one whose lock did not say when it tried,
// is not judged. Ops from another machine's clock count only where
// certain: their windows narrowed, their leases widened, by clock_bound.

// heldSpan is a closed span [from, to] a lease is possibly held over.
type heldSpan struct {
	token    string
	from, to int64
}

// starvedSpan is the longest free span of a waiter's window.
type starvedSpan struct {
	from, to int64
}

// possiblyHeld returns each token's possibly-held span among one key's
// ops, sorted by from.
func possiblyHeld(kops []*history.Op, horizon, eps int64) []heldSpan {
	rs := newReach()
	from := map[string]int64{}
	released := map[string]int64{}
	relCall := map[string]int64{} // earliest ok release's call
	ttl := map[string]int64{}     // an acquire's TTL; -1 once an extend may have set another
	for _, op := range kops {
		b := op.ClockBound
		latest := op.Latest(horizon) + b
		switch {
		case op.Type == history.Fail || op.Token == "":
		case op.F == history.Acquire:
			if f, ok := from[op.Token]; !ok || op.Call-b < f {
				from[op.Token] = max(0, op.Call-b)
			}
			rs.see(op.Token, false, latest, int64(op.TTL()))
			if ttl[op.Token] >= 0 {
				ttl[op.Token] = max(ttl[op.Token], int64(op.TTL()))
			}
		case op.F == history.Extend:
			rs.see(op.Token, op.Mode == history.ExtendAdd, latest, int64(op.TTL()))
			ttl[op.Token] = -1
		case op.F == history.Release && op.Type == history.OK:
			if r, ok := released[op.Token]; !ok || latest < r {
				released[op.Token] = latest
			}
			if c, ok := relCall[op.Token]; !ok || op.Call-b < c {
				relCall[op.Token] = op.Call - b
			}
		}
	}
	// An ok release was held when it took effect, no earlier than its
	// call: a lease no extend may have set was granted no earlier than
	// that less its TTL and eps.
	for tok, c := range relCall {
		if d := ttl[tok]; d > 0 {
			from[tok] = max(from[tok], c-d-eps)
		}
	}
	spans := make([]heldSpan, 0, len(from))
	for tok, f := range from {
		to := addBound(addBound(rs.set[tok], rs.add[tok]), eps)
		if r, ok := released[tok]; ok {
			to = min(to, r)
		}
		if to >= f {
			spans = append(spans, heldSpan{tok, f, to})
		}
	}
	slices.SortFunc(spans, func(a, b heldSpan) int {
		if c := cmpInt(a.from, b.from); c != 0 {
			return c
		}
		return cmpInt(a.to, b.to)
	})
	return spans
}

// waitWindow is the span op certainly waited over, and whether it is
// judged at all.
func waitWindow(op *history.Op) (from, to int64, judged bool) {
	if op.F != history.Acquire || op.WaitMs <= 0 || op.WakeMs <= 0 {
		return 0, 0, false
	}
	b := op.ClockBound
	switch {
	case op.Type == history.OK && op.Tried > 0:
		from, to = op.Call+b, op.Tried-b
	case op.Type == history.Fail:
		from, to = op.Call+b, min(op.Call+op.WaitMs*int64(time.Millisecond), op.Return)-b
	default:
		return 0, 0, false
	}
	return from, to, to > from
}

// WakeFault is nemesis.ClientDropUnlock, the fault under which a waiter
// may starve by its lock's own doing (TestStallSpans_DropUnlockIsTheWakeFault).
const WakeFault = "drop-unlock"

// stallSpans are the fault windows of ops but WakeFault's, from start to
// heal (a window never healed: to the end): spans a waiter is never
// judged in.
func stallSpans(ops []history.Op) []starvedSpan {
	var out []starvedSpan
	for _, w := range FaultWindows(ops) {
		if w.Fault == WakeFault {
			continue
		}
		to := w.HealedAt()
		if to < 0 {
			to = inf
		}
		out = append(out, starvedSpan{from: w.Start, to: to})
	}
	return out
}

// longestFree is the longest span within [ws, we] where fewer than k of
// spans (sorted by from; the waiter's own token left out) cover every
// instant, and no stall does. Between consecutive span ends (points) the
// cover is constant, so the free set is free gaps joined through free
// points; a span's length is the sup of its free instants' (a busy end
// bounds it).
func longestFree(spans []heldSpan, stalls []starvedSpan, own string, k int, ws, we int64) starvedSpan {
	var in []heldSpan
	points := []int64{ws, we}
	for _, s := range spans {
		if s.from > we {
			break
		}
		if s.to < ws || s.token == own {
			continue
		}
		in = append(in, s)
		points = append(points, max(s.from, ws), min(s.to, we))
	}
	var stalled []starvedSpan
	for _, s := range stalls {
		if s.from <= we && s.to >= ws {
			stalled = append(stalled, s)
			points = append(points, max(s.from, ws), min(s.to, we))
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	cover := func(lo, hi int64) int { // spans covering all of [lo, hi]
		n := 0
		for _, s := range in {
			if s.from <= lo && s.to >= hi {
				n++
			}
		}
		for _, s := range stalled {
			if s.from <= lo && s.to >= hi {
				n += k // no lock takes a key then
			}
		}
		return n
	}
	var best starvedSpan
	start := -1 // the point the free run through the gap before i began at
	for i := 0; i+1 < len(points); i++ {
		if cover(points[i], points[i+1]) >= k { // the gap after points[i]
			start = -1
			continue
		}
		if start < 0 || cover(points[i], points[i]) >= k { // a busy point splits a run
			start = i
		}
		if points[i+1]-points[start] > best.to-best.from {
			best = starvedSpan{points[start], points[i+1]}
		}
	}
	return best
}

// starvedOn finds one key's starved waiters, reports each to add, and
// returns how many waiters it judged, how many waited while their key
// certainly had a free permit at all (the chance a lost wake-up needs),
// how many were starved, and the longest a starved one slept past its
// bound.
func starvedOn(key string, kops []*history.Op, stalls []starvedSpan, opt Options, add func(Violation)) (judged, chances, starved int64, longest time.Duration) {
	spans := possiblyHeld(kops, int64(opt.InfoHorizon), int64(opt.ClockTolerance))
	for _, op := range kops {
		ws, we, ok := waitWindow(op)
		if !ok {
			continue
		}
		judged++
		bound := op.WakeMs * int64(time.Millisecond)
		sp := longestFree(spans, stalls, op.Token, max(op.Permits, 1), ws, we)
		if sp.to > sp.from {
			chances++ // its key certainly had a free permit while it waited
		}
		if sp.to-sp.from <= bound {
			continue
		}
		starved++
		longest = max(longest, time.Duration(sp.to-sp.from-bound))
		add(starvedViolation(key, op, sp))
	}
	return judged, chances, starved, longest
}

// starvedViolation names the waiter, the span and the bound.
func starvedViolation(key string, op *history.Op, sp starvedSpan) Violation {
	free := "no lease"
	if k := max(op.Permits, 1); k > 1 {
		free = fmt.Sprintf("fewer than %d leases", k)
	}
	ended := "took the key"
	if op.Type == history.Fail {
		ended = "gave up"
	}
	return Violation{Key: key,
		Message: fmt.Sprintf("starved waiter on %s: p%d's blocking acquire (wait %v, called %s, %s at %s) slept %v while the key certainly had a free permit (%s possibly held from %s to %s), past its lock's wake-up bound of %v",
			key, op.Process, time.Duration(op.WaitMs)*time.Millisecond, history.Seconds(op.Call), ended, history.Seconds(op.Return),
			time.Duration(sp.to-sp.from).Round(time.Millisecond), free, history.Seconds(sp.from), history.Seconds(sp.to), time.Duration(op.WakeMs)*time.Millisecond),
		Ops:     []int64{op.Index},
		Minimal: []int64{op.Index},
		Window:  [2]int64{sp.from, sp.to}}
}

// starvedWaiters is Liveness's starved-waiter check over ops: the
// blocking acquires judged, those that waited while their key certainly
// had a free permit, those starved (each reported to add) and the
// longest a starved one slept past its bound. A history with no
// blocking acquire is not grouped at all.
func starvedWaiters(ops []history.Op, opt Options, add func(Violation)) (judged, chances, starved int64, longest time.Duration) {
	if !slices.ContainsFunc(ops, func(op history.Op) bool { return op.WaitMs > 0 }) {
		return 0, 0, 0, 0
	}
	keys, groups := byKey(ops, func(op *history.Op) bool {
		return op.F == history.Acquire || op.F == history.Release || op.F == history.Extend
	})
	stalls := stallSpans(ops)
	for _, key := range keys {
		j, c, s, l := starvedOn(key, groups[key], stalls, opt, add)
		judged, chances, starved, longest = judged+j, chances+c, starved+s, max(longest, l)
	}
	return judged, chances, starved, longest
}
