package checker

import (
	"context"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The fewest ops that cannot all be true. A key is invalid when no
// timeline explains all its ops; the explanation a reader needs is the
// smallest set of them whose recorded outcomes no timeline explains,
// whatever the other ops did: the acquire that found the key held and the
// lease that held it. An ok op outside the set is not deleted but made
// indeterminate (it took effect as ok within its interval, or never):
// deleting the lease that held the key would leave its refusals with no
// holder, a contradiction the history does not contain; an indeterminate
// op only adds timelines (never taking effect is deleting it, taking
// effect is what it recorded or more). A refused acquire or a failed
// release or extend outside the set is left out: in the model such an op
// sets no lease (an acquire refused keeps the state, a release or extend
// that failed keeps it or frees its own lease, which it needs gone, and
// the unchanged state admits everything the free one does: step), so all
// it adds to a timeline is a condition, and leaving it out only drops
// that condition. Made indeterminate instead, it could have set a lease
// of its own, which no op that failed does in the model, and every
// refusal near a stuck key would be a possible holder the set must rule
// out by keeping it: sets of a hundred ops where two say it all (the
// lease that ended, the refusal after it). So every timeline of the key
// is, less the ops left out, one of the relaxed key's, and a set found
// invalid relaxed is a contradiction in the key whatever the other ops
// did (TestRelaxed_LosesNoTimeline checks it against the oracle).
// minimal shrinks the set of ops kept as recorded by the ddmin scheme
// (drop chunks, halving their size, while the key stays invalid), each
// candidate decided by the same checker, reductions and all: every set it
// returns was found invalid by the model, so it is a proof, not a guess.
// It is 1-minimal where it had the time (no op can be left to the
// others); a candidate not decided in time counts as valid, so the set
// may be larger, never wrong.

// minimalFor bounds the shrinking of one violation, and minimalStep the
// check of each candidate.
const (
	minimalFor  = time.Second
	minimalStep = 200 * time.Millisecond
)

// minimal returns the ops of lops (an invalid key's ops, in order) that
// the model finds invalid as recorded with every other op indeterminate,
// as few as it found within minimalFor; nil if lops is not found invalid
// again. Only candidates (w.candidate: the ops near a violation,
// nearOps; every op of a key shrunk whole) are kept as recorded; the
// others are context, always indeterminate. It starts from the ops whose
// indexes are in the first of hints that is a contradiction already.
func (c *keyCheck) minimal(lops []*lockOp, w near, hints ...[]int64) []*lockOp {
	ctx, cancel := context.WithTimeout(c.ctx, minimalFor)
	defer cancel()
	invalid := func(kept []int) bool {
		if ctx.Err() != nil {
			return false
		}
		step, cancel := context.WithTimeout(ctx, minimalStep)
		defer cancel()
		d := keyCheck{ctx: step, m: c.m, pm: c.pm, skip: c.skip, decideOnly: true}
		v, _, _ := d.check("", relaxed(lops, kept))
		return v == Invalid
	}
	// First the ops the violation names, then those in its window too:
	// most contradictions lie there, and a few ops shrink in a few
	// checks (each candidate that is not a contradiction costs up to
	// minimalStep, the search that cannot refute it running out).
	var cur []int
	for _, h := range hints {
		for i, lo := range lops {
			if slices.Contains(h, lo.index) && w.candidate(lo) {
				cur = append(cur, i)
			}
		}
		if len(cur) > 0 && invalid(cur) {
			break
		}
		cur = nil
	}
	if cur == nil && w.hintsOnly {
		return nil
	}
	if cur == nil {
		for i, lo := range lops {
			if w.candidate(lo) {
				cur = append(cur, i)
			}
		}
		if len(cur) == 0 || !invalid(cur) {
			return nil
		}
	}
	cur = shrink(ctx, cur, invalid)
	out := make([]*lockOp, len(cur))
	for k, i := range cur {
		out[k] = lops[i]
	}
	return out
}

// shrink drops chunks of cur while what is left stays invalid, halving
// the chunk when none can go, until no single op can (ddmin's
// complement steps), or ctx ends.
func shrink(ctx context.Context, cur []int, invalid func([]int) bool) []int {
	for chunk := max(len(cur)/2, 1); ; {
		dropped := false
		// From the end: the earliest contradiction is the one kept.
		for end := len(cur); end > 0 && len(cur) > 1; {
			at := max(end-chunk, 0)
			rest := append(slices.Clone(cur[:at]), cur[end:]...)
			if invalid(rest) {
				cur, dropped = rest, true
			}
			end = at
		}
		if ctx.Err() != nil || chunk == 1 && !dropped {
			return cur
		}
		if !dropped {
			chunk = max(chunk/2, 1)
		}
	}
}

// The lines of an explanation that head the fewest ops, and the ops
// around the failure point after them.
const (
	fewestLine = "the fewest ops that cannot all be true:"
	aroundLine = "around where the search stopped:"
)

// relaxed returns lops with every op but those at the indexes kept
// relaxed: an ok op made indeterminate (it took effect as ok within its
// interval, or never; one with no token gets one of its own), a refused
// or failed op left out. An op already indeterminate stays as it is.
func relaxed(lops []*lockOp, kept []int) []*lockOp {
	keep := make([]bool, len(lops))
	for _, i := range kept {
		keep[i] = true
	}
	out := make([]*lockOp, 0, len(lops))
	for i, lo := range lops {
		switch {
		case keep[i] || lo.typ == history.Info:
			out = append(out, lo)
		case lo.typ == history.OK:
			l := *lo
			l.typ = history.Info
			if l.token == "" {
				l.token = ownToken(l.index)
			}
			out = append(out, &l)
		}
	}
	return out
}

// minimalOps is the most ok and indeterminate lock ops the fewest ops
// are sought among: every op but a few is relaxed, an ok one made
// indeterminate, and a key of thousands of indeterminate ops costs each
// candidate's check more than the whole search may take (a bench cell's
// broken keys of 5,000 ops held its results back by a minute). Refusals
// and failed ops are left out unless kept, and cost a candidate little,
// so they count only up to ten times as many (minimalFails). A longer
// key is shrunk among the ops near its violation (nearOps), if they are
// no more.
const (
	minimalOps   = 400
	minimalFails = 10 * minimalOps
)

// wholeOps is the most ok and indeterminate lock ops a key may have to
// be shrunk whole; a variable so that a test can send small keys through
// nearOps.
var wholeOps = minimalOps

// fewEnough says whether a candidate's check over ops is cheap enough
// to shrink them: at most limit ops that did not fail, minimalFails in
// all.
func fewEnough(ops []*lockOp, limit int) bool {
	if len(ops) > minimalFails {
		return false
	}
	n := 0
	for _, lo := range ops {
		if lo.typ != history.Fail {
			n++
		}
	}
	return n <= limit
}

// near bounds the candidates of minimal: the ops near a violation of a
// key too long to shrink whole (nearOps), or, unbounded, every op.
type near struct {
	from, to int64
	// hintsOnly: start only from a hint (a key too long for the
	// search from all its ops to end).
	hintsOnly bool
}

// whole is the bound of a key shrunk whole.
var whole = near{from: -inf, to: inf}

// candidate says whether lo may be among the fewest ops.
func (w near) candidate(lo *lockOp) bool {
	return lo.ret <= w.to && (lo.call >= w.from || lo.typ == history.OK)
}

// nearOps returns, for a key too long to shrink whole, the ops among
// which a contradiction can be shown within w: the candidates are the ops
// that returned by w.to and were called from w.from on, or before it
// recorded ok (an acquire, which needed the key free; a release or an
// extend, which needed its own lease held: no lease left out can be what
// lets them be); the others kept are context, always relaxed. A set S
// of candidates that the model finds invalid among these ops, every other
// one of them relaxed, is invalid in the whole key with every other op
// relaxed, because each op left out changes nothing S can
// see:
//   - an op called after w.to takes effect after every op of S has (each
//     by its return); in a timeline of the whole key, the kept ops that
//     took effect after the first op left out did so after S too, and can
//     be taken never to happen (they are indeterminate);
//   - a lease (an acquire, its extends and releases, by token; an op with
//     no token alone) called before w.from whose expiry, bounded by
//     tokenReach over every order, is over eps before w.from, has ended
//     in every timeline before any op of S called from w.from on takes
//     effect. Left out, the key is free where it held it: an ok op of S
//     called before w.from took effect where no lease left out held the
//     key (an acquire) or while its own lease held it (a release, an
//     extend), and does the same without them; the context is
//     relaxed and asks nothing;
//   - an op that failed, called before w.from, is no candidate, and
//     relaxed leaves it out of the context anyway; and it sets no lease,
//     so it is no setter whose reach counts.
//
// So every timeline of the whole key gives one of the kept ops: valid
// whole implies valid kept, and invalid kept is invalid whole.
//
// holdWindows' windows do not serve here: they read refusals and failed
// extends as recorded and an ok release as the lease's end, where every
// ok op of the context is indeterminate and may have set or kept the key.
func nearOps(m leaseModel, lops []*lockOp, w near) []*lockOp {
	lease := func(lo *lockOp) string {
		if lo.token == "" {
			return ownToken(lo.index)
		}
		return lo.token
	}
	setters := map[string][]*lockOp{}
	for _, lo := range lops {
		if (lo.f == history.Acquire || lo.f == history.Extend) && lo.typ != history.Fail {
			setters[lease(lo)] = append(setters[lease(lo)], lo)
		}
	}
	reach := map[string]int64{}
	for t, s := range setters {
		reach[t] = tokenReach(m, s)
	}
	var out []*lockOp
	for _, lo := range lops {
		if lo.call > w.to {
			continue
		}
		if lo.call < w.from {
			if lo.typ == history.Fail {
				continue // not a candidate, and left out of the context
			}
			if r, ok := reach[lease(lo)]; !ok || r+m.eps < w.from {
				continue
			}
		}
		out = append(out, lo)
	}
	return out
}

// nearMargins are the widenings, in TTLs, of the span of a violation's
// ops that withMinimal tries: a refusal's holder may have been acquired a
// TTL before it, or more where ops took long (a stalled Redis).
var nearMargins = []int64{0, 1, 4, 16}

// nearProof is the most ops a violation may name to be tried, when too
// many ops are near it, in its whole key (each check of which costs a
// pass over every op of the key).
const nearProof = 4

// minimalKeys is how many invalid keys of a check get their fewest ops
// (the first, in key order: those the report shows).
const minimalKeys = 10

// withMinimal puts into v the indexes of the fewest ops found that cannot
// all be true, and their descriptions first in its explanation.
func (c *keyCheck) withMinimal(v *Violation, lops []*lockOp) {
	if v == nil {
		return
	}
	window := func(lops []*lockOp) []int64 {
		var out []int64
		for _, lo := range lops {
			if slices.Contains(v.Ops, lo.index) || lo.call <= v.Window[1] && lo.orig >= v.Window[0] {
				out = append(out, lo.index)
			}
		}
		return out
	}
	var set []*lockOp
	if fewEnough(lops, wholeOps) {
		set = c.minimal(lops, whole, v.Ops, window(lops))
	} else {
		set = c.minimalNear(v, lops, window)
	}
	if set == nil {
		return
	}
	lines := []string{fewestLine}
	for _, lo := range set {
		v.Minimal = append(v.Minimal, lo.index)
		lines = append(lines, "!! "+describeOp(lo))
	}
	if len(v.Explanation) > 0 {
		lines = append(lines, aroundLine)
	}
	v.Explanation = append(lines, v.Explanation...)
}

// minimalNear is withMinimal's search on a key too long to search whole:
// among the ops near the span of those v names (its window, where a
// search's may span the key), widened while none is found; the tries
// share minimalFor. window gives the ops of a set inside v's window.
func (c *keyCheck) minimalNear(v *Violation, lops []*lockOp, window func([]*lockOp) []int64) (set []*lockOp) {
	ctx, cancel := context.WithTimeout(c.ctx, minimalFor)
	defer cancel()
	sub := *c
	sub.ctx = ctx
	span := near{from: inf, to: -inf}
	var ttl int64
	for _, lo := range lops {
		if slices.Contains(v.Ops, lo.index) {
			span = near{from: min(span.from, lo.call), to: max(span.to, lo.ret)}
		}
		ttl = max(ttl, lo.ttl)
	}
	if span.from > span.to {
		span = near{from: v.Window[0], to: v.Window[1]}
	}
	for _, k := range nearMargins {
		w := near{from: span.from - k*ttl, to: span.to}
		ops := nearOps(c.m, lops, w)
		if !fewEnough(ops, minimalOps) || ctx.Err() != nil {
			break
		}
		if set = sub.minimal(ops, w, v.Ops, window(ops)); set != nil {
			break
		}
	}
	// Too many ops near it (a hot key): the few ops v names, kept in
	// the whole key, where a proof that names its ops (a lease surely
	// held, an acquire inside it) is decided by the reductions
	// before any search.
	if set == nil && len(v.Ops) <= nearProof && ctx.Err() == nil {
		set = sub.minimal(lops, near{from: -inf, to: inf, hintsOnly: true}, v.Ops)
	}
	return set
}
