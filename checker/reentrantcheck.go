package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// reentrantShape is a reentrant lock's: acquires that declare a depth,
// judged by the reentrant model with hold counts and, at the resource,
// no two owners' sections at once.
var reentrantShape = Shape{Name: "reentrant", Of: HistoryReentrant, Linearizable: linearizableReentrant, AtResource: reentrantAtResource}

// HistoryReentrant reports whether ops are a reentrant lock's: their
// acquires declare a depth (history.Op.Depth; the strict reader takes
// one shape a history).
func HistoryReentrant(ops []history.Op) bool {
	for i := range ops {
		if ops[i].F == history.Acquire {
			return ops[i].Depth > 0
		}
	}
	return false
}

// linearizableReentrant is Linearizable for a reentrant lock: each key's
// acquire, release and extend ops against the reentrant model, keys in
// parallel, a key not decided within opt.Timeout unknown.
func linearizableReentrant(ctx context.Context, ops []history.Op, opt Options) Result {
	res := Result{Name: "linearizable", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool {
		return op.F == history.Acquire || op.F == history.Release || op.F == history.Extend
	})
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	ctx, spent, end := boundedByMemory(ctx, opt.Memory)
	defer end()
	rm := reentrantModel{leaseModel{eps: int64(opt.ClockTolerance)}}
	pm := stopOnDone(ctx, rm.porcupine())
	out := make([]keyResult, len(keys))
	parallel(len(keys), func(i int) {
		key, kr, start := keys[i], &out[i], time.Now()
		lops := toLockOps(groups[key], int64(opt.InfoHorizon))
		verdict, judged, dropped := decideReentrant(ctx, pm, lops, rm.m.eps)
		kr.reduced = dropped
		switch verdict {
		case porcupine.Ok:
			kr.verdict = Valid
		case porcupine.Illegal:
			kr.verdict, kr.v = Invalid, stuckReentrant(ctx, pm, key, judged, rm.m.eps)
		default:
			kr.verdict, kr.why = Unknown, undecided(key, lops, shapeReason(parent, spent), time.Since(start))
		}
	})
	collectKeys(&res, keys, groups, out)
	if res.Note == "" {
		res.Note = "judged as a reentrant lock"
	}
	return res
}

// decideReentrant decides one key's ops under the reentrant model pm:
// first two owners at a time (refuteByOwners), then the whole key with
// the refusals reentrantRefused and dropDominatedRefusals drop, cut by
// reentrantCuts. It returns
// the verdict, the ops it was reached on (those to find the violation
// in, where illegal) and how many refusals it dropped.
func decideReentrant(ctx context.Context, pm porcupine.Model, ops []*lockOp, eps int64) (porcupine.CheckResult, []*lockOp, int) {
	if pair := refuteByOwners(ctx, pm, ops, eps); pair != nil {
		return porcupine.Illegal, pair, 0
	}
	rest, dropped := reentrantRefused(ops, eps)
	rest, dominated := dropDominatedRefusals(rest)
	return checkReentrant(ctx, pm, rest, eps), rest, dropped + dominated
}

// refuteByOwners looks for two owners whose ops alone, failures left
// out, no timeline explains: each owner with the few before it (by first
// call) whose leases may reach its first op. Such a pair refutes the key
// exactly: a timeline of all its ops gives one of these. Leaving out a
// definite failure (a refusal, a release or extend of a lease gone)
// leaves every instant and end as it was and changes no state, and
// leaving out every op of the other owners only frees the key where they
// held it, which a grant needs, while an ok release, extend or
// re-entry asks only about its own owner's lease. On a lock that grants
// two owners at once it finds the grant in a handful of ops, where the
// whole key's search (a refutation must try every order of its
// concurrent ops) would run out of time.
func refuteByOwners(ctx context.Context, pm porcupine.Model, ops []*lockOp, eps int64) []*lockOp {
	type owner struct {
		ops      []*lockOp
		from, to int64 // its first call, and the latest its lease may be held to
	}
	by := map[string]*owner{}
	var owners []*owner
	for _, o := range ops {
		if o.typ == history.Fail {
			continue
		}
		w := by[o.token]
		if w == nil {
			w = &owner{from: o.call, to: o.ret}
			by[o.token] = w
			owners = append(owners, w)
		}
		w.ops = append(w.ops, o)
		w.from, w.to = min(w.from, o.call), max(w.to, o.ret)
		if o.f != history.Release {
			w.to = max(w.to, addBound(addBound(o.ret, o.ttl), eps))
		}
	}
	slices.SortStableFunc(owners, func(a, b *owner) int { return cmpInt(a.from, b.from) })
	const before = 4
	for i, b := range owners {
		for _, a := range owners[max(0, i-before):i] {
			if a.to < b.from || ctx.Err() != nil {
				continue
			}
			pair := slices.Concat(a.ops, b.ops)
			if porcupine.CheckOperations(pm, toPorcupine(pair)) && ctx.Err() == nil {
				continue
			}
			if ctx.Err() == nil {
				return pair
			}
		}
	}
	return nil
}

// checkReentrant decides one key's ops under the reentrant model pm,
// segment by segment (reentrantCuts), each by porcupine from the initial
// state: illegal if a segment is, unknown if one was not decided (or ctx
// ended) and none is illegal.
func checkReentrant(ctx context.Context, pm porcupine.Model, ops []*lockOp, eps int64) porcupine.CheckResult {
	verdict := porcupine.Ok
	for _, seg := range reentrantCuts(ops, eps) {
		timeout, ok := remaining(ctx)
		if !ok {
			return porcupine.Unknown
		}
		switch porcupine.CheckOperationsTimeout(pm, toPorcupine(seg), timeout) {
		case porcupine.Illegal:
			if ctx.Err() != nil {
				return porcupine.Unknown
			}
			return porcupine.Illegal
		case porcupine.Unknown:
			verdict = porcupine.Unknown
		}
	}
	if ctx.Err() != nil {
		return porcupine.Unknown
	}
	return verdict
}

// reentrantCuts splits a key's ops (in their order) at every call c that
// no op's interval reaches (each op before it returned, an info op could
// take effect, before c) and after which no lease of the ops before it
// can be held: for each token, its ok and info acquires are no more than
// its ok releases, or its lease certainly ended by c (its latest expiry,
// as reach bounds it, plus eps, before c). The first is exact whatever
// the order the token's ops took effect in: each acquire adds at most one
// hold (a re-entry one more, a new lease 1), each ok release takes one
// away, so the holds left are at most acquires less releases, none. Then
// in every timeline the ops before c come first and leave no lease a later
// op can find held, as the initial state has none: so the key's ops are
// linearizable iff each segment is, from the initial state (permitCuts's
// argument; the oracle test checks it with and without the cuts).
func reentrantCuts(ops []*lockOp, eps int64) [][]*lockOp {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
	r, balance := newReach(), map[string]int{}
	var at []int64
	maxRet := int64(-1)
	for i, o := range byCall {
		if i > 0 && maxRet < o.call && (len(at) == 0 || o.call > at[len(at)-1]) && allReleased(r, balance, o.call, eps) {
			at = append(at, o.call)
		}
		switch {
		case o.f == history.Acquire && o.typ != history.Fail:
			balance[o.token]++
		case o.f == history.Release && o.typ == history.OK:
			balance[o.token]--
		}
		if o.typ != history.Fail && o.f != history.Release {
			r.see(o.token, o.f == history.Extend && o.add, o.ret, o.ttl)
		}
		maxRet = max(maxRet, o.ret)
	}
	if len(at) == 0 {
		return [][]*lockOp{ops}
	}
	segs := make([][]*lockOp, len(at)+1)
	for _, o := range ops {
		j, found := slices.BinarySearch(at, o.call)
		if found {
			j++
		}
		segs[j] = append(segs[j], o)
	}
	return segs
}

// allReleased reports whether every token seen can hold no lease at c:
// released as often as acquired, or certainly expired (reentrantCuts).
func allReleased(r *reach, balance map[string]int, c, eps int64) bool {
	for tok, n := range balance {
		if n <= 0 {
			continue
		}
		if e, ok := r.set[tok]; ok && addBound(addBound(e, r.add[tok]), eps) >= c {
			return false
		}
		delete(balance, tok) // expired: its later ops start anew, as from the initial state
	}
	return true
}

// reentrantRefused drops from one key's ops each definite refusal at
// some instant of whose interval another owner's lease was surely held,
// and says how many it dropped. It is exact: in every timeline of the
// rest that owner holds at that instant t, so the refusal is legal at t,
// and placed at t, after every op of instant t or less, it keeps the
// instants non-decreasing and changes no state; so a timeline of the
// rest is one of the whole (the converse holds for any op left out). An
// owner's lease is surely held over (ret, end): ret the earliest return
// of its definite ok acquires, end its earliest release call, and the
// earliest call plus TTL less eps of its acquires and replacing extends
// that may have taken effect (each sets the lease's end anew; an
// additive extend only lengthens it); no lease of it ends before, in a
// timeline at all (a definite failure of it inside would be illegal
// there, and so the rest too). The contention a reentrant lock meets is
// mostly such refusals (a hot key's clients retrying while it is held),
// which the search would otherwise have to order.
func reentrantRefused(ops []*lockOp, eps int64) ([]*lockOp, int) {
	type owner struct{ from, to int64 }
	by := map[string]*owner{}
	for _, o := range ops {
		w := by[o.token]
		if w == nil {
			w = &owner{from: history.MaxTime, to: history.MaxTime}
			by[o.token] = w
		}
		switch {
		case o.f == history.Release:
			w.to = min(w.to, o.call)
		case o.typ == history.Fail:
		case o.f == history.Acquire || o.f == history.Extend && !o.add:
			w.to = min(w.to, o.call+o.ttl-eps)
			if o.f == history.Acquire && o.typ == history.OK {
				w.from = min(w.from, o.ret)
			}
		}
	}
	type held struct {
		span
		token string
	}
	var spans []held
	for tok, w := range by {
		if w.from < w.to {
			spans = append(spans, held{span{w.from, w.to}, tok})
		}
	}
	slices.SortFunc(spans, func(a, b held) int { return cmpInt(a.from, b.from) })
	reach := make([]int64, len(spans)) // the latest end of spans[:j+1]
	for j, sp := range spans {
		reach[j] = sp.to
		if j > 0 {
			reach[j] = max(reach[j], reach[j-1])
		}
	}
	refused := func(o *lockOp) bool {
		j, _ := slices.BinarySearchFunc(spans, o.ret, func(sp held, t int64) int { return cmpInt(sp.from, t) })
		for j--; j >= 0 && reach[j] > o.call; j-- {
			// an instant t of [call, ret] inside (from, to)
			if sp := spans[j]; max(o.call, sp.from+1) <= min(o.ret, sp.to-1) && sp.token != o.token {
				return true
			}
		}
		return false
	}
	out := ops[:0:0]
	for _, o := range ops {
		if o.f == history.Acquire && o.typ == history.Fail && refused(o) {
			continue
		}
		out = append(out, o)
	}
	return out, len(ops) - len(out)
}

// stuckReentrant is the violation of an illegal key: the first segment
// no timeline explains and in it, by bisection on its ops in call order,
// an op whose ops called before it admit a timeline and with it admit
// none (as stuckPermits finds it for a semaphore).
func stuckReentrant(ctx context.Context, pm porcupine.Model, key string, ops []*lockOp, eps int64) *Violation {
	v := &Violation{Key: key, Message: key + ": no timeline of a reentrant lock explains the key's ops"}
	check := func(seg []*lockOp) porcupine.CheckResult {
		timeout, ok := remaining(ctx)
		if !ok {
			return porcupine.Unknown
		}
		return porcupine.CheckOperationsTimeout(pm, toPorcupine(seg), timeout)
	}
	for _, seg := range reentrantCuts(ops, eps) {
		if check(seg) != porcupine.Illegal {
			continue
		}
		byCall := slices.Clone(seg)
		slices.SortStableFunc(byCall, func(a, b *lockOp) int { return cmpInt(a.call, b.call) })
		lo, hi := 0, len(byCall) // byCall[:lo] legal, byCall[:hi] illegal
		for hi-lo > 1 {
			switch mid := (lo + hi) / 2; check(byCall[:mid]) {
			case porcupine.Illegal:
				hi = mid
			case porcupine.Ok:
				lo = mid
			default:
				lo = hi - 1
			}
		}
		stuck := byCall[hi-1]
		v.Message = fmt.Sprintf("%s: no timeline of a reentrant lock goes on past #%d (%s, called %s, returned %s): the ops called before it admit one, with it none",
			key, stuck.index, describeOpShort(stuck), history.Seconds(stuck.call), history.Seconds(stuck.orig))
		v.Window = [2]int64{byCall[0].call, stuck.orig}
		for _, o := range byCall[:hi] {
			v.Window[1] = max(v.Window[1], o.orig)
		}
		for _, o := range byCall[max(0, hi-12):hi] {
			v.Ops = append(v.Ops, o.index)
		}
		return v
	}
	return v
}

// Reentrant finds, as the protected resource saw them, two owners in
// their sections at once on a key: one owner's nested sections may
// overlap (a lease is (process, token), the token naming the owner, as
// sections reads it), two owners' never.
func Reentrant(ops []history.Op) Result {
	res := sectionCheck("reentrant", ops, func(key string, in *sections, w *history.Op, _ int) string {
		if in.leases < 2 {
			return ""
		}
		return fmt.Sprintf("two owners on %s, a reentrant lock: p%d (owner %s) entered its section at %s while %s were in theirs",
			key, w.Process, short(w.Token), history.Seconds(w.Call), in.describe(w))
	})
	res.Figures["double_holders"] = int64(res.ViolationCount)
	return res
}

// reentrantAtResource is the mutex checker for a reentrant lock
// (Reentrant), with the re-entries granted (ok acquires of depth 2 and
// more) counted.
func reentrantAtResource(ops []history.Op) Result {
	res := Reentrant(ops)
	res.Name = "mutex"
	var reentries int64
	for i := range ops {
		if ops[i].F == history.Acquire && ops[i].Type == history.OK && ops[i].Depth > 1 {
			reentries++
		}
	}
	res.Figures["reentries"] = reentries
	res.Note = "judged as a reentrant lock: no two owners in their sections at once"
	return res
}

// dropDominatedRefusals drops each anonymous refusal (a failed acquire
// whose token holds nothing: no op of it took or may take effect) whose
// interval holds another anonymous refusal's: given a timeline without
// it, give it the other's instant, right after it. That instant lies in
// its interval, keeps the instants non-decreasing, and the state there
// is one in which a lease was held, which is all either needs (neither
// owner holds one). So the key is linearizable with it iff without it.
func dropDominatedRefusals(ops []*lockOp) ([]*lockOp, int) {
	holds := map[string]bool{}
	for _, o := range ops {
		if o.typ != history.Fail {
			holds[o.token] = true
		}
	}
	var anon []*lockOp
	for _, o := range ops {
		if o.f == history.Acquire && o.typ == history.Fail && !holds[o.token] {
			anon = append(anon, o)
		}
	}
	// By call, latest first: a refusal is dominated if one called at or
	// after it returned by its return.
	slices.SortStableFunc(anon, func(a, b *lockOp) int { return cmpInt(b.call, a.call)*2 + cmpInt(a.ret, b.ret) })
	drop := map[*lockOp]bool{}
	minRet := int64(inf)
	for _, o := range anon {
		if minRet <= o.ret {
			drop[o] = true
			continue
		}
		minRet = o.ret
	}
	if len(drop) == 0 {
		return ops, 0
	}
	out := make([]*lockOp, 0, len(ops)-len(drop))
	for _, o := range ops {
		if !drop[o] {
			out = append(out, o)
		}
	}
	return out, len(drop)
}
