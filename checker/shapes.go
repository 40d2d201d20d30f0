package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// A history's shape is what its acquires declare (DESIGN "Shapes beyond
// the mutex"): permits > 1 on every acquire, a semaphore of that many
// (the strict reader takes one value a history); none, a mutex. The
// checkers of the two guarantees keep their names for every shape, so
// that verify's gates, the thresholds and the report read one line each,
// and each judges by the history's shape: linearizable by the shape's
// model, mutex by the shape's rule at the resource. A mutex's history
// takes exactly the paths it took before shapes.

// semaphoreShape is a semaphore's: acquires that declare more than one
// permit, judged by the semaphore model of that many and, at the
// resource, no more than that many sections at once.
var semaphoreShape = Shape{Name: "semaphore", peaks: true,
	Of: func(ops []history.Op) bool { return HistoryPermits(ops) > 1 },
	Linearizable: func(ctx context.Context, ops []history.Op, opt Options) Result {
		return linearizablePermits(ctx, ops, opt, HistoryPermits(ops))
	},
	AtResource: func(ops []history.Op) Result { return semaphoreAtResource(ops, HistoryPermits(ops)) },
	figures:    []string{AllPermitsTried, CrashedFull},
	coverage: func(c shapeCounts) {
		k := HistoryPermits(c.ops)
		c.cov[AllPermitsTried] = allPermitsTried(c.acquires, c.keys, k, c.o)
		c.cov[CrashedFull] = crashedFull(c.ops, c.acquires, c.keys, k, c.o)
	}}

// HistoryPermits is the permits the acquires of ops declare (1: a
// mutex's).
func HistoryPermits(ops []history.Op) int {
	k := 1
	for i := range ops {
		if ops[i].F == history.Acquire {
			k = max(k, ops[i].Permits)
		}
	}
	return k
}

// linearizablePermits is Linearizable for a semaphore of k permits:
// each key's acquire, release and extend ops against the shape's model
// (checkPermits with semaphore{k}), keys in parallel, a key not decided
// within opt.Timeout unknown.
func linearizablePermits(ctx context.Context, ops []history.Op, opt Options, k int) Result {
	return linearizableShape(ctx, ops, opt, semaphore{k}, func(pops []*permitOp, eps int64) ([]*permitOp, int) {
		return surelyRefused(pops, k, eps)
	})
}

// linearizableShape is Linearizable for the shape sh: each key's ops,
// less those reduce drops (refusals legal anywhere in their interval),
// against sh's model.
func linearizableShape(ctx context.Context, ops []history.Op, opt Options, sh shape, reduce func([]*permitOp, int64) ([]*permitOp, int)) Result {
	rw, isRW := sh.(readWrite)
	res := Result{Name: "linearizable", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool {
		return op.F == history.Acquire || op.F == history.Release || op.F == history.Extend
	})
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	ctx, spent, end := boundedByMemory(ctx, opt.Memory)
	defer end()
	out := make([]keyResult, len(keys))
	parallel(len(keys), func(i int) {
		key, kr, start := keys[i], &out[i], time.Now()
		m := newPermitModel(sh, int64(opt.ClockTolerance))
		pops, dropped := reduce(toPermitOps(groups[key], int64(opt.InfoHorizon), rw.writerPref), m.eps)
		kr.reduced = dropped
		parts := [][]*permitOp{pops}
		if isRW {
			rest, apart := readersApart(pops, m.eps)
			parts = append(apart, rest)
		}
		verdict, illegal := checkParts(ctx, m, parts)
		switch verdict {
		case porcupine.Ok:
			kr.verdict = Valid
		case porcupine.Illegal:
			kr.verdict, kr.v = Invalid, stuckPermits(ctx, m, key, illegal)
		default:
			kr.verdict = Unknown
			kr.why = undecided(key, toLockOps(groups[key], int64(opt.InfoHorizon)), shapeReason(parent, spent), time.Since(start))
		}
	})
	collectKeys(&res, keys, groups, out)
	if res.Note == "" {
		res.Note = fmt.Sprintf("judged as a %s", sh)
	}
	return res
}

// checkParts checks each part of one key's ops (independent timelines)
// under m: illegal, with the part, if one is; unknown if one is and none
// is illegal.
func checkParts(ctx context.Context, m permitModel, parts [][]*permitOp) (porcupine.CheckResult, []*permitOp) {
	verdict := porcupine.Ok
	for _, p := range parts {
		switch checkPermits(ctx, m, p) {
		case porcupine.Illegal:
			return porcupine.Illegal, p
		case porcupine.Unknown:
			verdict = porcupine.Unknown
		}
	}
	return verdict, nil
}

// surelyRefused drops from one key's ops (of a semaphore of k) each
// definite refusal at some instant of whose interval k leases were
// surely held, then each whose interval holds another's
// (nestedRefusals), and says how many it dropped. It is exact: such a
// refusal is legal at that instant in every timeline, and a refusal
// changes no state, so a linearization of the rest takes it there, and
// one of the whole is one of the rest. A lease is surely held at t when
// its ok acquire returned before t, no release that may have happened
// (ok or info) was called by t, and its earliest end is past t: from its
// acquire's call and from each extend that may have happened and sets a
// new TTL (an additive one only lengthens), plus the TTL, less eps. The
// contention a semaphore meets is mostly such refusals (a hot key's
// clients try while its k permits are held), which the model would
// otherwise carry in flight.
func surelyRefused(ops []*permitOp, k int, eps int64) ([]*permitOp, int) {
	spans := surelyHeldSpans(ops, eps)
	longest := longestSpan(spans)
	out := ops[:0:0]
	for _, o := range ops {
		if o.f == history.Acquire && o.typ == history.Fail && heldWithin(spans, longest, o) >= k {
			continue
		}
		out = append(out, o)
	}
	out, _ = nestedRefusals(out)
	return out, len(ops) - len(out)
}

// surelyHeldLease is one token's ok grant, earliest sure end (-1: none) and earliest release call.
type surelyHeldLease struct {
	grant        *permitOp
	end, release int64
}

// surelyHeldSpans returns, by start, each lease's surely-held span, for surelyRefused to count.
func surelyHeldSpans(ops []*permitOp, eps int64) []span {
	by := map[string]*surelyHeldLease{}
	get := func(tok string) *surelyHeldLease {
		l := by[tok]
		if l == nil {
			l = &surelyHeldLease{end: history.MaxTime, release: history.MaxTime}
			by[tok] = l
		}
		return l
	}
	for _, o := range ops {
		if o.typ == history.Fail || o.f == history.Acquire && o.typ != history.OK {
			if o.f == history.Acquire && o.typ == history.Info {
				get(o.token).end = -1 // an info grant of the token: not surely anything
			}
			continue
		}
		l := get(o.token)
		switch {
		case o.f == history.Acquire:
			if l.grant != nil {
				l.end = -1 // a token granted twice: leave it to the model
			}
			l.grant = o
			l.end = min(l.end, o.call+o.ttl-eps)
		case o.f == history.Release:
			l.release = min(l.release, o.call)
		case o.f == history.Extend && !o.add:
			l.end = min(l.end, o.call+o.ttl-eps)
		}
	}
	var spans []span // surely held over (from, to)
	for _, l := range by {
		if l.grant != nil && l.end > l.grant.ret {
			spans = append(spans, span{l.grant.ret, min(l.end, l.release)})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmpInt(a.from, b.from) })
	return spans
}

// heldThrough counts the sorted spans covering all of o's interval, the leases surely held through it.
func heldThrough(spans []span, o *permitOp) int {
	held := 0
	for _, sp := range spans {
		if sp.from >= o.call {
			break
		}
		if o.ret < sp.to {
			held++
		}
	}
	return held
}

// stuckPermits is the violation of an illegal key under m: the first
// segment (permitCuts) no timeline explains, and in it, by bisection on
// its ops in call order, an op whose ops called up to it but not it
// admit a timeline and with it admit none, where no timeline could go
// on. Bisection keeps a legal prefix below and an illegal one above, so
// it ends on such an op even though legality need not grow with the
// prefix.
func stuckPermits(ctx context.Context, m permitModel, key string, ops []*permitOp) *Violation {
	v := &Violation{Key: key, Message: fmt.Sprintf("%s: no timeline of a %s explains the key's ops", key, m.sh)}
	for _, seg := range permitCuts(ops, m.eps) {
		if checkPermits(ctx, m, seg) != porcupine.Illegal {
			continue
		}
		byCall := slices.Clone(seg)
		slices.SortStableFunc(byCall, func(a, b *permitOp) int { return cmpInt(a.call, b.call) })
		lo, hi := 0, len(byCall) // byCall[:lo] legal, byCall[:hi] illegal
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			switch checkPermits(ctx, m, byCall[:mid]) {
			case porcupine.Illegal:
				hi = mid
			case porcupine.Ok:
				lo = mid
			default:
				lo = hi - 1 // undecided: the segment is what can be told
			}
		}
		stuck := byCall[hi-1]
		v.Message = fmt.Sprintf("%s: no timeline of a %s goes on past #%d (%s, called %s, returned %s): the ops called before it admit one, with it none",
			key, m.sh, stuck.index, stuck, history.Seconds(stuck.call), history.Seconds(stuck.orig))
		v.Window = [2]int64{byCall[0].call, stuck.orig}
		for _, o := range byCall[:hi] {
			v.Window[1] = max(v.Window[1], o.orig)
		}
		for _, o := range byCall[max(0, hi-12):hi] { // the stuck op and those called just before it
			v.Ops = append(v.Ops, o.index)
		}
		return v
	}
	return v
}

// semaphoreAtResource is the mutex checker for a semaphore of k permits:
// no k + 1 leases in their sections at once (Semaphore), and the most
// that were (peak_holders) against k (permits).
func semaphoreAtResource(ops []history.Op, k int) Result {
	res := Semaphore(ops)
	res.Name = "mutex"
	res.Figures["peak_holders"] = peakHolders(ops)
	res.Figures["permits"] = int64(k)
	res.Note = fmt.Sprintf("judged as a %s: no %d leases in their sections at once", semaphore{k}, k+1)
	return res
}

// peakHolders is the most leases of one key in their sections at once,
// over ops (each key's, as sectionCheck sweeps them).
func peakHolders(ops []history.Op) int64 {
	var peak int64
	sectionCheck("", ops, func(_ string, in *sections, _ *history.Op, _ int) string {
		peak = max(peak, int64(in.leases))
		return ""
	})
	return peak
}

// shapeReason is why a shape's key was not decided: the run interrupted
// (parent ended), the process's memory past its bound (spent), or its
// time out.
func shapeReason(parent context.Context, spent func() bool) string {
	switch {
	case parent.Err() != nil:
		return Interrupted
	case spent():
		return OutOfMemory
	}
	return OutOfTime
}
