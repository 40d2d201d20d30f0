package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// keyCheck decides the keys of one history, one at a time.
type keyCheck struct {
	ctx   context.Context
	m     leaseModel
	pm    porcupine.Model
	notes []porcupine.Annotation
	// outDir receives visualizations ("" for none); visualizeAll asks for
	// one of every key, valid or not.
	outDir       string
	visualizeAll bool
	// skip turns reductions off.
	skip reductions
	// budget bounds the memory of the key's searches (nil: none).
	budget *budget
	// writeErr is the first visualization the key could not write.
	writeErr error
	// decideOnly skips what explains a violation (a search for its
	// failure point, its drawing): minimal only needs the verdict.
	decideOnly bool
	// drawSpent is the time the check has spent drawing valid keys, in
	// ns (shared by its keys and a Partition's buckets); undrawn says the
	// key was valid and not drawn.
	drawSpent *atomic.Int64
	undrawn   bool
}

// draw writes a key's visualization from info, and keeps the first error.
func (c *keyCheck) draw(info porcupine.LinearizationInfo, key string) string {
	f, err := visualize(c.pm, info, c.notes, c.outDir, key)
	if err != nil {
		c.writeErr = cmp.Or(c.writeErr, err)
		return ""
	}
	return f
}

// search runs porcupine on lops within the time and memory left; a search
// cut short by either is Unknown.
func (c *keyCheck) search(lops []*lockOp, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	timeout, ok := remaining(c.ctx)
	if !ok || c.budget.spent() {
		return porcupine.Unknown, porcupine.LinearizationInfo{}
	}
	pm := stopOnDone(c.ctx, c.budget.model(c.pm, len(lops)))
	var r porcupine.CheckResult
	var info porcupine.LinearizationInfo
	if verbose {
		r, info = porcupine.CheckOperationsVerbose(pm, toPorcupine(lops), timeout)
	} else {
		r = porcupine.CheckOperationsTimeout(pm, toPorcupine(lops), timeout)
	}
	if c.budget.spent() || c.ctx.Err() != nil {
		return porcupine.Unknown, info
	}
	return r, info
}

// stopOnDone makes pm's every step fail once ctx is done: porcupine takes
// a timeout, not a context, so a search already running would otherwise
// run to its timer after an interrupt (Ctrl-C, SIGTERM). A search whose
// steps all fail unwinds at once; search reads it as Unknown.
func stopOnDone(ctx context.Context, pm porcupine.Model) porcupine.Model {
	step := pm.Step
	var n atomic.Int64
	var done atomic.Bool
	pm.Step = func(state, input, output any) (bool, any) {
		if done.Load() {
			return false, state
		}
		if n.Add(1)&255 == 0 && ctx.Err() != nil {
			done.Store(true)
			return false, state
		}
		return step(state, input, output)
	}
	return pm
}

// check decides one key. Porcupine alone blows up on hot keys: with k
// contenders retrying, it may have to try ~2^k orders of concurrent failed
// acquires. These reductions keep it tractable; each is exact (the oracle
// test in oracle_test.go compares the checker with and without them
// against a brute-force enumeration of the timeline semantics):
//
//  1. expiredFail refutes, in O(n log n), a key with a failed acquire
//     called after every lease that could hold the key had expired (a
//     stuck lock), sparing porcupine an exhaustive search.
//
//     1b. uncoveredFail (orphans.go) refutes, in O(n log n), a key with a
//     failed acquire whose interval meets no lease's widest hold window:
//     no timeline has a holder at its instant.
//
//     1c. dropSurplusOrphans (orphans.go) keeps of interchangeable orphans
//     only as many as can take effect.
//
//     1e. orphanShortfall (orphans.go) refutes, in O(n^2 m), a key whose
//     refusals that only orphans can cover need more orphan leases than
//     there are orphans that could take effect there (a stuck key behind
//     a Redis stalled again and again).
//
//     1d. certainOverlap (overlap.go) refutes, in O(n log n), a key with
//     an ok acquire that took effect, whatever the order, while another
//     lease certainly held the key: ops too slow for porcupine to refute
//     still show a lease that never ended or outlived its release.
//
//     1f. unownedRelease (overlap.go) refutes, in O(n), a key with an ok
//     release or extend of a token that no acquire which may take effect
//     names: it needs its token to hold the key, and only an acquire
//     sets a holder. The search would have to try every order of a wide
//     key before it found that none has one.
//
//  2. Drop dominated failed acquires. If failed acquires F1 and F2 have
//     F1.call <= F2.call and F2.return <= F1.return, F1 can be removed
//     without changing the answer: given a timeline without F1, give F1
//     F2's instant, right after F2. That instant lies in F1's interval,
//     keeps instants non-decreasing, and the state there is the one F2
//     was legal in, at the same instant. The converse is 3.
//
//  3. Refute without failed acquires first. A failed acquire changes no
//     state; removing it from a timeline leaves a timeline of the rest
//     (its instant only sat between its neighbours'). Hence: rest not
//     linearizable => whole not linearizable. Double holders and releases
//     of someone else's lease are found here, on a history a fraction of
//     the size.
//
//  4. Refute without orphan info acquires too: an info acquire whose
//     token no other op names (the client never learnt it held the
//     lease). Removing one from a timeline leaves a timeline of the rest:
//     if it did not take effect it changed nothing; if it did, the key was
//     free at its instant, and without it the key stays free until it is
//     next acquired, where with it the key was held by a lease no later op
//     can touch. Every op legal after it with it there stays legal without
//     it: an acquire finds the key free; a release or extend of another
//     lease needs that lease set after it, or fails, which a free key
//     allows too. Hence: rest without them not linearizable => whole not
//     linearizable. A node that restarts empty under load leaves dozens of
//     such ops pending across the restart, and porcupine would have to try
//     every order of them before it could refute the key.
//
//  5. Prove the key valid with a witness (witness.go): the failed acquires
//     placed into a timeline of the other ops. Failed acquires that do not
//     fit are added to the ops porcupine searches, and the witness is
//     tried again on its new timeline; after a few rounds every remaining
//     failed acquire is added, which is porcupine on the whole key (with 2
//     applied). A first witness confines info ops to their recorded
//     interval (tighten). Under heavy load, when dozens of ops overlap
//     every hand-over, this is what keeps a valid hot key from running
//     into the timeout. Each search first tries edfOrder (edf.go), which
//     takes the ops that must take effect soonest first and finds a
//     slow lock's order where porcupine backtracks without end; porcupine
//     decides when it finds none.
//
//     5b. On a key with orphans, the witness is first built without them
//     (the search of 4), and orphans are inserted where failed acquires
//     lack a holder (orphans.go): an orphan that took effect changes nothing
//     any other op can see but which failed acquires have a holder and
//     when the next acquire may succeed, so the timeline, re-checked with
//     numbers, is a timeline of the whole key. porcupine never searches
//     the orphans' orders, which for 30 orphans took gigabytes.
func (c *keyCheck) check(key string, lops []*lockOp) (Verdict, *Violation, int) {
	if c.skip == skipAll {
		return c.porcupineAll(key, lops, 0)
	}
	if c.skip&skipSurplus == 0 {
		lops = dropSurplusOrphans(c.m, lops)
	}
	if c.skip&skipNarrow == 0 {
		lops = narrowOrphans(c.m, lops)
	}
	rest, fails := splitFails(lops)
	if v := c.refute(key, lops, len(fails) > 0); v != nil {
		return Invalid, v, 0
	}
	// outside: the failed acquires porcupine does not search.
	outside := fails
	if c.skip&skipDominated == 0 {
		outside = dropDominatedFails(fails)
	}
	dropped := len(fails) - len(outside)
	if bare, orphans := orphansOf(rest); len(orphans) > 0 && c.skip&skipOrphans == 0 {
		if tight, ok := tighten(bare); ok && c.skip&skipWitness == 0 {
			if v, viol, decided := c.witness(key, lops, tight, outside, orphans, true); decided {
				return v, viol, dropped
			}
		}
		if v, viol, decided := c.witness(key, lops, bare, outside, orphans, false); decided {
			return v, viol, dropped
		}
	}
	if tight, ok := tighten(rest); ok && c.skip&skipWitness == 0 {
		if v, viol, decided := c.witness(key, lops, tight, outside, nil, true); decided {
			return v, viol, dropped
		}
	}
	if v, viol, decided := c.witness(key, lops, rest, outside, nil, false); decided {
		return v, viol, dropped
	}
	return c.porcupineAll(key, append(slices.Clip(rest), outside...), dropped)
}

// refute runs the reductions that refute a key without a search (1a to
// 1f): the violation of the first that does, or nil. fails says whether
// the key has failed acquires (those of 1a, 1b and 1e are about them).
func (c *keyCheck) refute(key string, lops []*lockOp, fails bool) *Violation {
	if fails && c.skip&skipExpiredFail == 0 {
		if v := c.expiredFail(key, lops); v != nil {
			return v
		}
	}
	if fails && c.skip&skipUncovered == 0 {
		if f := uncoveredFail(c.m, lops); f != nil {
			return c.uncovered(key, lops, f)
		}
	}
	if fails && c.skip&skipShortfall == 0 {
		if f, need, have := orphanShortfall(c.m, lops); f != nil {
			return c.shortfall(key, lops, f, need, have)
		}
	}
	if c.skip&skipUnowned == 0 {
		if r := unownedRelease(lops); r != nil {
			v := c.failViolation(key, lops, r, r.call, r.ret)
			v.Message = fmt.Sprintf("%s: p%d %s ok at %s with token %q, which no acquire that may have taken effect names: a lease released or extended by a client that never held it",
				key, r.process, r.f, history.Seconds(r.orig), r.token)
			return v
		}
	}
	if c.skip&skipOverlap == 0 {
		if y, g := certainOverlap(c.m, lops); y != nil {
			return c.overlap(key, y, g)
		}
	}
	return nil
}

// checkCut checks a key's ops segment by segment, split at its cuts
// (cuts): the key is invalid if a segment is, unknown if one is and none
// is invalid, else valid. Porcupine's memory grows with the square of the
// ops it searches at once, so a key with a hundred thousand ops (an
// hour's soak on a few thousand keys) needs gigabytes whole and little
// cut. When every valid key is drawn (a small history, visualizeAll), the
// key is checked whole, so that its drawing is whole too.
func (c *keyCheck) checkCut(key string, lops []*lockOp) (Verdict, *Violation, int) {
	segs := cuts(lops)
	if len(segs) == 1 || c.skip&skipCuts != 0 || c.visualizeAll {
		return c.check(key, lops)
	}
	verdict, reduced := Valid, 0
	for _, seg := range segs {
		v, viol, r := c.check(key, seg)
		reduced += r
		switch v {
		case Invalid:
			return Invalid, viol, reduced
		case Unknown:
			verdict = Unknown
		}
	}
	return verdict, nil, reduced
}

// cuts splits a key's ops, kept in their order, at every ok release r that
// nothing overlaps: each other op returned (an info op: could take effect,
// up to its return + horizon) before r was called, or was called after r
// returned. Then in every timeline r comes after all the ops before it
// and before all the ops after it, and leaves the key free; the ops after
// it see exactly what a history starting on a free key would (their
// instants all follow r's). So the key's ops are linearizable iff each
// segment is, checked on its own from a free key: the split is exact
// (TestLinearizable_AgreesWithOracle checks it against the oracle, with
// and without cuts).
func cuts(lops []*lockOp) [][]*lockOp {
	byCall := slices.Clone(lops)
	slices.SortStableFunc(byCall, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	var at []int64 // the calls of the cutting releases, ascending
	maxRet := int64(-1)
	for i, lo := range byCall {
		if lo.f == history.Release && lo.typ == history.OK && maxRet < lo.call &&
			i+1 < len(byCall) && byCall[i+1].call > lo.ret {
			at = append(at, lo.call)
		}
		maxRet = max(maxRet, lo.ret)
	}
	if len(at) == 0 {
		return [][]*lockOp{lops}
	}
	segs := make([][]*lockOp, len(at)+1)
	for _, lo := range lops {
		// The segment of lo: how many cuts were called before it (a cut
		// belongs to the segment it ends).
		j, _ := slices.BinarySearch(at, lo.call)
		segs[j] = append(segs[j], lo)
	}
	return segs
}

// tighten returns rest with every info op confined to its recorded
// interval (it took effect by its return, or never), if rest has any. A
// timeline of the confined ops is one of the real ones, so it proves
// validity; it refutes nothing. It spares porcupine the search over where,
// up to the horizon, each of many info ops took effect: on a hot key, one
// placed too early dooms the ops after it, and porcupine then backtracks
// through every order of the info ops in between.
func tighten(rest []*lockOp) ([]*lockOp, bool) {
	var out []*lockOp
	for i, lo := range rest {
		if lo.typ != history.Info || lo.ret == lo.orig {
			continue
		}
		if out == nil {
			out = slices.Clone(rest)
		}
		t := *lo
		t.ret = t.orig
		out[i] = &t
	}
	return out, out != nil
}

// witness searches included (the key's ops but the failed acquires
// outside) with porcupine, then tries to place the failed acquires into
// its timeline; those that do not fit are searched with included, round
// after round until every failed acquire has a place (each round adds at
// least one, so there are at most len(outside) + 1; a round costs far
// less than porcupine on the whole key, where each failed acquire
// multiplies the orders to try). decided is false when it proved nothing
// (the caller searches on). tight marks included as confined info ops,
// where porcupine's "illegal" proves nothing either. orphans are the
// key's orphan info acquires when included leaves them out (5b): cover
// inserts them into the timeline where failed acquires lack a holder,
// and each round searches with its misfits an orphan that could hold the
// key for each (holdersFor); a search that finds no order then proves
// nothing, since the orphans were left out.
func (c *keyCheck) witness(key string, lops, included, outside, orphans []*lockOp, tight bool) (Verdict, *Violation, bool) {
	leftOut := len(orphans) > 0
	for round := 0; ; round++ {
		refutes := !tight && (!leftOut || round == 0)
		r, lin := c.linearization(included, refutes)
		switch {
		case r == porcupine.Illegal && refutes:
			// Without orphans, only the ops of reduction 4 refute: once
			// failed acquires are in, the orphans left out could be
			// their holders.
			return Invalid, c.violation(key, included), true
		case r != porcupine.Ok && r != porcupine.Illegal:
			return Unknown, nil, true
		case r == porcupine.Illegal || lin == nil:
			return "", nil, false
		case len(outside) == 0:
			c.visualizeValid(key, lops)
			return Valid, nil, true
		case c.skip&skipWitness != 0:
			return "", nil, false
		}
		path, ok := c.m.replay(included, lin)
		if !ok {
			return "", nil, false
		}
		cover := orphans
		if c.skip&skipCover != 0 {
			cover = nil
		}
		misfits := c.m.place(path, outside, cover)
		if len(misfits) == 0 {
			c.visualizeValid(key, lops)
			return Valid, nil, true
		}
		if c.skip&skipSparse == 0 && round < sparseRounds {
			if kept := sparse(misfits); len(kept) < len(misfits) {
				misfits = kept
				sparsed.Add(1)
			}
		}
		included = append(slices.Clip(included), misfits...)
		outside = without(outside, misfits)
		if c.skip&skipHolders == 0 {
			var holders []*lockOp
			holders, orphans = c.m.holdersFor(misfits, orphans)
			included = append(included, holders...)
		}
	}
}

// sparse keeps of misfits (failed acquires a witness could not place)
// those a search needs to be told of: one, then each whose interval
// begins after the last kept one's ends, by their returns. A timeline
// that misses many refusals misses them in runs (the refusals of a
// stall, each overlapping the next, with no holder the timeline put
// there); a search told of a few across the run must give each of them
// a holder, which mends the run's order, and the next round places the
// rest or keeps a few more. The witness proves what it proves from any
// subset searched (the rest are placed or searched in a later round);
// the search is what costs: the 47 misfits of one client stall
// (TestLinearizable_ClientStallDecided) took a 155-op search 1.9 s; told
// 5 of them, then one a round, the key is decided in 11 rounds, 18 ms.
//
// After sparseRounds rounds every misfit goes in, as before: a round
// adds at least one, but a run that needs most of its refusals told
// would otherwise take a round for each.
func sparse(misfits []*lockOp) []*lockOp {
	byRet := slices.Clone(misfits)
	slices.SortStableFunc(byRet, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	var kept []*lockOp
	for _, f := range byRet {
		if len(kept) == 0 || f.call > kept[len(kept)-1].ret {
			kept = append(kept, f)
		}
	}
	return kept
}

const sparseRounds = 32

// sparsed counts the rounds whose misfits sparse thinned (tests read it
// to see that a history took that path).
var sparsed atomic.Int64

// holdersFor picks of orphans (the key's info acquires that no other op
// names, left out of the search) one that could hold the key at some
// instant of each failed acquire of fails, the narrowest, unless one
// picked could already; it returns those and the orphans left. A failed
// acquire that the timeline found could not place may need an orphan's
// lease to refuse it, and a round searched without orphans finds none
// (refusals around few grants, their holders' replies lost); a round
// searched with every orphan in went past edfOrder's step bound. It
// changes what the witness proves in nothing: a linearization found of
// more of the key's ops is one still (the orphans left out took no
// effect, or cover failed acquires in place), and a search that finds
// none proves nothing where orphans were left out. An orphan (never
// released) that took effect at i holds the key over [i, i + TTL + eps],
// i within its interval: it can refuse an acquire at t within its own if
// it was called by t's latest and its latest expiry is past t's
// earliest.
func (m leaseModel) holdersFor(fails, orphans []*lockOp) (holders, rest []*lockOp) {
	covers := func(o, f *lockOp) bool { return o.call <= f.ret && f.call <= addBound(o.ret+o.ttl, m.eps) }
	rest = slices.Clone(orphans)
	for _, f := range fails {
		if slices.ContainsFunc(holders, func(o *lockOp) bool { return covers(o, f) }) {
			continue
		}
		best := -1
		for i, o := range rest {
			if covers(o, f) && (best < 0 || o.ret-o.call < rest[best].ret-rest[best].call) {
				best = i
			}
		}
		if best >= 0 {
			holders = append(holders, rest[best])
			rest = slices.Delete(rest, best, best+1)
		}
	}
	return holders, rest
}

// splitFails splits lops into its failed acquires and the rest, each in
// lops's order.
func splitFails(lops []*lockOp) (rest, fails []*lockOp) {
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ == history.Fail {
			fails = append(fails, lo)
		} else {
			rest = append(rest, lo)
		}
	}
	return rest, fails
}

// without returns ops minus those in drop, which is a subsequence of ops.
func without(ops, drop []*lockOp) []*lockOp {
	out := make([]*lockOp, 0, len(ops)-len(drop))
	for _, o := range ops {
		if len(drop) > 0 && drop[0] == o {
			drop = drop[1:]
			continue
		}
		out = append(out, o)
	}
	return out
}

// porcupineAll decides lops with porcupine alone.
func (c *keyCheck) porcupineAll(key string, lops []*lockOp, dropped int) (Verdict, *Violation, int) {
	switch r, _ := c.search(lops, false); r {
	case porcupine.Ok:
		c.visualizeValid(key, lops)
		return Valid, nil, dropped
	case porcupine.Illegal:
		return Invalid, c.violation(key, lops), dropped
	}
	return Unknown, nil, dropped
}

// visualizeValid writes a valid key's visualization when every key gets
// one (small histories).
func (c *keyCheck) visualizeValid(key string, lops []*lockOp) {
	if !c.visualizeAll {
		return
	}
	// The key is decided: its drawing may not cost more than drawValidFor
	// (a verbose search of a key whose ops span many leases could take
	// the whole check timeout), nor the check's drawings together more
	// than drawValidTotal; one not found by then is not drawn, and the
	// result says how many were not (undrawn_keys).
	left := time.Duration(drawValidTotal.Nanoseconds() - c.drawSpent.Load())
	if left <= 0 {
		c.undrawn = true
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, min(drawValidFor, left))
	defer cancel()
	draw := *c
	draw.ctx = ctx
	r, info := draw.search(lops, true)
	c.drawSpent.Add(int64(time.Since(start)))
	if r != porcupine.Ok {
		c.undrawn = true
		return
	}
	c.draw(info, key)
}

// drawValidFor bounds the search that draws a valid key, and
// drawValidTotal those of one check.
const (
	drawValidFor   = 500 * time.Millisecond
	drawValidTotal = 2 * time.Second
)

// violation explains an illegal key: a second, verbose pass yields the
// partial linearizations, from which explain finds the failure point.
func (c *keyCheck) violation(key string, lops []*lockOp) *Violation {
	v := &Violation{Key: key}
	if c.decideOnly {
		return v
	}
	r, info := c.search(lops, true)
	if r == porcupine.Illegal {
		explain(c.m, lops, info, v)
		if c.outDir != "" {
			v.File = c.draw(info, key)
		}
	}
	if v.Message == "" {
		v.Message = fmt.Sprintf("%s: no linearization of its %d lock ops under the lease model", key, len(lops))
	}
	return v
}

// expiredFail refutes a key with a failed acquire that no timeline admits:
// one called more than eps after the latest expiry of every lease that
// could take effect before it.
func (c *keyCheck) expiredFail(key string, lops []*lockOp) *Violation {
	f, eMax := expiredFail(c.m, lops)
	if f == nil {
		return nil
	}
	v := c.failViolation(key, lops, f, max(eMax, 0), f.ret)
	v.Message = fmt.Sprintf("%s: p%d acquire fail at %s though every lease that could hold the key had expired by %s (tolerance %v): the key outlived its TTL (stuck lock, or Redis's clock lags ours)",
		key, f.process, history.Seconds(f.orig), history.Seconds(eMax), time.Duration(c.m.eps))
	if eMax <= -inf {
		v.Message = fmt.Sprintf("%s: p%d acquire fail at %s though no lease had been granted that could hold the key: a definite failure with no holder",
			key, f.process, history.Seconds(f.orig))
	}
	return v
}

// uncovered explains failed acquire f, which uncoveredFail found no
// holder for.
func (c *keyCheck) uncovered(key string, lops []*lockOp, f *lockOp) *Violation {
	v := c.failViolation(key, lops, f, f.call, f.ret)
	v.Message = fmt.Sprintf("%s: p%d acquire fail at %s though no lease could hold the key then (every lease that could was released, expired or not yet set; tolerance %v): a definite failure with no holder",
		key, f.process, history.Seconds(f.orig), time.Duration(c.m.eps))
	return v
}

// shortfall explains the refusal f that orphanShortfall found.
func (c *keyCheck) shortfall(key string, lops []*lockOp, f *lockOp, need, have int) *Violation {
	v := c.failViolation(key, lops, f, f.call, f.ret)
	v.Message = fmt.Sprintf("%s: p%d acquire fail at %s, with the refusals before it that no lease but an orphan (an indeterminate acquire no other op names) could hold the key for, needs %d orphan leases at least, and at most %d could have taken effect then, one after another (tolerance %v): refusals with no possible holder, a key locked by a lease nothing recorded (a stuck lock) or a held lease lost (a restart, a failover)",
		key, f.process, history.Seconds(f.orig), need, have, time.Duration(c.m.eps))
	return v
}

// failViolation is the violation of op f, its window from `from`. It is
// drawn when the ops up to it are few: those called by through (f's
// return, or later when the proof needs a later op), already without a
// timeline, less orphans (which porcupine would have to order); porcupine
// must exhaust them to draw the failure, which on a long key costs more
// than the proof did.
func (c *keyCheck) failViolation(key string, lops []*lockOp, f *lockOp, from, through int64) *Violation {
	if c.decideOnly {
		return &Violation{Key: key}
	}
	var upTo []*lockOp
	for _, lo := range lops {
		if lo.call <= through {
			upTo = append(upTo, lo)
		}
	}
	v := &Violation{Key: key}
	if bare, _ := orphansOf(upTo); len(bare) <= drawnFailOps {
		ctx, cancel := context.WithTimeout(c.ctx, drawFailFor)
		defer cancel()
		draw := *c
		draw.ctx = ctx
		v = draw.violation(key, bare)
		c.writeErr = cmp.Or(c.writeErr, draw.writeErr)
	} else {
		v.Explanation = []string{"=> " + describeOp(f)}
	}
	v.Ops, v.Window = []int64{f.index}, [2]int64{from, f.orig}
	return v
}

// drawnFailOps and drawFailFor bound what failViolation draws: porcupine
// proves a few dozen overlapping failed acquires illegal only by trying
// their orders (77 ops took 14 s).
const (
	drawnFailOps = 300
	drawFailFor  = time.Second
)

// expiredFail finds a failed acquire called more than eps after every
// lease's latest expiry. A failed acquire at instant t needs a holder whose
// expiry E has t <= E + eps, set by ops that took effect before t, so
// called no later than the failed acquire's return; reach bounds E over
// exactly those ops, in any order they may have taken effect. If even that
// bound plus eps is before the call, no timeline admits it: sound, and
// O(n log n).
func expiredFail(m leaseModel, lops []*lockOp) (*lockOp, int64) {
	var leases, fails []*lockOp
	for _, lo := range lops {
		switch {
		case lo.f == history.Acquire && lo.typ == history.Fail:
			fails = append(fails, lo)
		case (lo.f == history.Acquire || lo.f == history.Extend) && lo.typ != history.Fail:
			leases = append(leases, lo)
		}
	}
	slices.SortFunc(leases, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	slices.SortFunc(fails, func(a, b *lockOp) int { return cmpInt(a.ret, b.ret) })
	r := newReach()
	k := 0
	for _, f := range fails {
		for ; k < len(leases) && leases[k].call <= f.ret; k++ {
			l := leases[k]
			r.see(l.token, l.f == history.Extend && l.add, l.ret, l.ttl)
		}
		if f.call > addBound(r.max, m.eps) {
			return f, r.max
		}
	}
	return nil, 0
}

// dropDominatedFails removes every failed acquire whose interval contains
// another failed acquire's interval (reduction 2 above). Of identical
// intervals one is kept. O(n log n).
func dropDominatedFails(fails []*lockOp) []*lockOp {
	order := slices.Clone(fails)
	// Latest call first; among equal calls, earliest return first. Then a
	// fail is dominated iff some fail seen before it returned no later.
	slices.SortFunc(order, func(a, b *lockOp) int {
		if c := cmpInt(b.call, a.call); c != 0 {
			return c
		}
		return cmpInt(a.ret, b.ret)
	})
	drop := map[*lockOp]bool{}
	minRet := int64(1<<63 - 1)
	for _, f := range order {
		if f.ret >= minRet {
			drop[f] = true
		}
		minRet = min(minRet, f.ret)
	}
	out := make([]*lockOp, 0, len(fails)-len(drop))
	for _, f := range fails {
		if !drop[f] {
			out = append(out, f)
		}
	}
	return out
}

// remaining is the time left before ctx's deadline; ok is false when none
// is (porcupine reads a timeout of 0 or less as "no timeout").
func remaining(ctx context.Context) (time.Duration, bool) {
	d := time.Until(deadlineOf(ctx))
	return d, d > 0
}
