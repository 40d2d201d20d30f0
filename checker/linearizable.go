package checker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// SmallHistory is the size up to which every key gets a visualization, not
// only the invalid ones.
const SmallHistory = 2000

// linearizableSpec registers Linearizable, of the lease contract.
var linearizableSpec = Spec{Check: Func("linearizable", Linearizable), Guarantee: LeaseContract,
	Figures: map[string]FigureMerge{"keys": Sum, "lock_ops": Sum, "invalid_keys": Sum, "unknown_keys": Sum, "reduced_ops": Sum, "undrawn_keys": Sum}}

// Linearizable judges the lease contract of a history by its shape's
// model (Shape.Linearizable; a mutex's: LinearizableMutex). opt is
// resolved (Options.Resolved): the checkers read it as it is.
func Linearizable(ctx context.Context, ops []history.Op, opt Options) Result {
	sh, err := shapeOf(ops, opt)
	if err != nil {
		return unknownShape("linearizable", err)
	}
	return sh.Linearizable(ctx, ops, opt)
}

// LinearizableMutex checks, key by key and keys in parallel, whether the
// acquire, release and extend ops of a mutex's history could have come
// from a correct lease (the lease-aware model). A key whose check does
// not finish within opt.Timeout (or before ctx ends) is unknown, never
// valid.
func LinearizableMutex(ctx context.Context, ops []history.Op, opt Options) Result {
	res := Result{Name: "linearizable", Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool {
		return op.F == history.Acquire || op.F == history.Release || op.F == history.Extend
	})
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	m := leaseModel{eps: int64(opt.ClockTolerance)}
	kc := keyCheck{ctx: ctx, m: m, pm: m.porcupine(), notes: nemesisAnnotations(ops), outDir: opt.OutDir,
		visualizeAll: opt.OutDir != "" && max(len(ops), opt.whole) <= SmallHistory, skip: opt.skip,
		drawSpent: cmp.Or(opt.drawSpent, new(atomic.Int64))}

	out := make([]keyResult, len(keys))
	// The keys checked at once share the memory budget.
	share := opt.Memory / int64(max(opt.shares, 1)*min(runtime.GOMAXPROCS(0), max(len(keys), 1)))
	watch := watchMemory(opt.Memory)
	defer watch.end()
	parallel(len(keys), func(k int) {
		key := keys[k]
		lops := toLockOps(groups[key], int64(opt.InfoHorizon))
		kr := &out[k]
		kc := kc
		kc.budget = &budget{limit: share, watch: watch}
		start := time.Now()
		if u, loose := looseClock(key, groups[key], lops); loose {
			kr.verdict, kr.why = Unknown, u
			return
		}
		if _, ok := remaining(ctx); ok {
			kr.verdict, kr.v, kr.reduced = kc.checkCut(key, lops)
		} else {
			kr.verdict = Unknown
		}
		kr.drawErr, kr.undrawn = kc.writeErr, kc.undrawn && kr.verdict == Valid
		if kr.verdict == Unknown {
			reason := OutOfTime
			switch {
			case kc.budget.spent():
				reason = OutOfMemory
			case parent.Err() != nil:
				reason = Interrupted
			}
			kr.why = undecided(key, lops, reason, time.Since(start))
		}
	})
	minimized := cmp.Or(opt.minimized, new(atomic.Int64))
	for k, key := range keys {
		if out[k].verdict == Invalid && parent.Err() == nil && minimized.Add(1) <= minimalKeys {
			kc.withMinimal(out[k].v, toLockOps(groups[key], int64(opt.InfoHorizon)))
		}
	}
	collectKeys(&res, keys, groups, out)
	return res
}

// looseClock says whether key's ops carry a clock_bound too wide for its
// TTL to be judged (over MaxBoundOfTTL of the shortest TTL), and why.
func looseClock(key string, ops []*history.Op, lops []*lockOp) (Undecided, bool) {
	var bound, ttl int64
	for _, op := range ops {
		bound = max(bound, op.ClockBound)
		if t := int64(op.TTL()); t > 0 && (ttl == 0 || t < ttl) {
			ttl = t
		}
	}
	if bound == 0 || float64(bound) <= MaxBoundOfTTL*float64(ttl) {
		return Undecided{}, false
	}
	u := undecided(key, lops, LooseClock, 0)
	u.Bound, u.TTL = bound, ttl
	return u, true
}

// keyResult is what Linearizable found on one key.
type keyResult struct {
	verdict Verdict
	v       *Violation
	reduced int
	why     Undecided
	drawErr error
	undrawn bool // valid, and not drawn (visualizeValid)
}

// collectKeys puts the keys' results into res: violations, undecided
// keys, figures and the verdict.
func collectKeys(res *Result, keys []string, groups map[string][]*history.Op, out []keyResult) {
	var lockOps, reduced, undrawn int64
	for k, key := range keys {
		lockOps += int64(len(groups[key]))
		reduced += int64(out[k].reduced)
		if out[k].undrawn {
			undrawn++
		}
		if err := out[k].drawErr; err != nil && res.WriteError == "" {
			res.WriteError = err.Error()
		}
		switch out[k].verdict {
		case Invalid:
			res.add(*out[k].v)
		case Unknown:
			res.UnknownKeys = append(res.UnknownKeys, key)
			res.Undecided = append(res.Undecided, out[k].why)
		}
	}
	res.Figures["keys"] = int64(len(keys))
	res.Figures["lock_ops"] = lockOps
	res.Figures["invalid_keys"] = int64(res.ViolationCount)
	res.Figures["unknown_keys"] = int64(len(res.UnknownKeys))
	res.Figures["reduced_ops"] = reduced
	if undrawn > 0 {
		// Decided valid, but the search that draws a key ran out of its
		// bound (visualizeValid): say so rather than leave it missing.
		res.Figures["undrawn_keys"] = undrawn
	}
	switch {
	case res.ViolationCount > 0:
		res.Verdict = Invalid
	case len(res.UnknownKeys) > 0:
		res.Verdict = Unknown
		res.Note = undecidedNote(res.Undecided)
	}
}

// parallel calls fn(i) for every i in [0, n), GOMAXPROCS calls at a time,
// each worker taking the next i, and returns when all have returned.
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	if ctx.Err() != nil {
		return time.Time{}
	}
	return d
}

// toLockOps converts one key's ops for the model. An info op may take effect
// up to horizon after it returned. An info acquire with no token gets one of
// its own: if it took effect, an unknown client holds the key.
func toLockOps(ops []*history.Op, horizon int64) []*lockOp {
	out := make([]*lockOp, 0, len(ops))
	for _, op := range ops {
		// An op from another machine's clock took effect within its
		// interval widened by its bound: more timelines, never a false
		// invalid (nothing took effect before the run began).
		b := op.ClockBound
		lo := &lockOp{index: op.Index, process: op.Process, f: op.F, typ: op.Type, token: op.Token,
			ttl: int64(op.TTL()), add: op.Mode == history.ExtendAdd, call: effectFrom(op), ret: op.Latest(horizon) + b, orig: op.Return + b}
		if op.Type == history.Info {
			if lo.token == "" {
				lo.token = ownToken(op.Index)
			}
		}
		out = append(out, lo)
	}
	return out
}

// effectFrom is the earliest instant op may have taken effect: its call
// (widened by its clock bound), or, for a blocking acquire that took the
// key and says when it sent the try that did (history.Op.Tried), that
// try: the grant was no earlier. Exact, and what keeps a key of blocking
// acquires decidable: each waiter's interval is its whole wait, dozens of
// them overlapping one another, where its grant is its last try's round
// trip (redis-py's blocking acquire at overrun, 40 waiters a key: a key of
// 303 lock ops out of the check's memory).
func effectFrom(op *history.Op) int64 {
	from := max(0, op.Call-op.ClockBound)
	if op.F == history.Acquire && op.Type == history.OK && op.Tried > 0 {
		from = max(from, op.Tried-op.ClockBound)
	}
	return from
}

// ownToken is the token of an op that names none (an indeterminate one,
// or one made so): a lease of its own, which no other op names.
func ownToken(index int64) string { return "?" + strconv.FormatInt(index, 10) }

func toPorcupine(lops []*lockOp) []porcupine.Operation {
	// Visualization lanes must be dense client ids from zero.
	lane := map[int]int{}
	pops := make([]porcupine.Operation, len(lops))
	for i, lo := range lops {
		id, ok := lane[lo.process]
		if !ok {
			id = len(lane)
			lane[lo.process] = id
		}
		pops[i] = porcupine.Operation{ClientId: id, Input: lo, Call: lo.call, Return: lo.ret}
	}
	return pops
}

// nemesisAnnotations shades the fault windows in visualizations.
func nemesisAnnotations(ops []history.Op) []porcupine.Annotation {
	var notes []porcupine.Annotation
	for _, w := range FaultWindows(ops) {
		end, desc := w.Stop, w.Fault
		if end < 0 {
			end, desc = w.Start, w.Fault+" (never healed)"
		}
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: w.Start, End: end,
			Description: desc, Details: w.String(), BackgroundColor: "#f4cccc"})
	}
	return notes
}

// VisualizationFile is the file name of a key's visualization.
func VisualizationFile(key string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, key)
	if safe != key {
		safe += "-" + strconv.FormatUint(uint64(fnv32(key)), 16)
	}
	return "linear-" + safe + ".html"
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func visualize(pm porcupine.Model, info porcupine.LinearizationInfo, notes []porcupine.Annotation, dir, key string) (string, error) {
	info.AddAnnotations(notes)
	name := VisualizationFile(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return name, porcupine.VisualizePath(pm, info, filepath.Join(dir, name))
}

// explain finds where the longest partial linearization got stuck and says
// why in words, with the ops around that point.
func explain(m leaseModel, lops []*lockOp, info porcupine.LinearizationInfo, v *Violation) {
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return
	}
	// porcupine gives them in a map's order: the longest, and of those the
	// first in id order, makes the explanation the same run to run.
	var longest []int
	for _, l := range parts[0] {
		if len(l) > len(longest) || len(l) == len(longest) && slices.Compare(l, longest) < 0 {
			longest = l
		}
	}
	states, done := replayPrefix(m, lops, longest)
	culprit := stuckOp(m, lops, states, done)
	if culprit < 0 {
		return
	}
	byToken := map[string]*lockOp{}
	for _, lo := range lops {
		if lo.f == history.Acquire && lo.typ != history.Fail {
			if _, ok := byToken[lo.token]; !ok {
				byToken[lo.token] = lo
			}
		}
	}
	v.Message = fmt.Sprintf("%s: %s", v.Key, m.reason(states[0], lops[culprit], byToken))
	if len(states) > 1 {
		v.Message += fmt.Sprintf(" (and in each of the %d other states the history allows)", len(states)-1)
	}
	describeWindow(lops, longest, done, culprit, byToken[states[0].holder], v)
}

// replayPrefix returns the states a linearized prefix can end in, and
// which ops it holds.
func replayPrefix(m leaseModel, lops []*lockOp, prefix []int) ([]leaseState, []bool) {
	states := []leaseState{initialState()}
	done := make([]bool, len(lops))
	for _, id := range prefix {
		var next []leaseState
		for _, s := range states {
			for _, n := range m.step(s, lops[id]) {
				if !containsState(next, n) {
					next = append(next, n)
				}
			}
		}
		states = next
		done[id] = true
	}
	return states, done
}

// stuckOp is the op that could go next after the prefix but that no state
// admits: of the ops called before the earliest return among the rest,
// the one that returned first. -1 if none.
func stuckOp(m leaseModel, lops []*lockOp, states []leaseState, done []bool) int {
	minRet := int64(1<<63 - 1)
	for i, lo := range lops {
		if !done[i] && lo.ret < minRet {
			minRet = lo.ret
		}
	}
	culprit := -1
	for i, lo := range lops {
		if done[i] || lo.call > minRet {
			continue
		}
		legal := false
		for _, s := range states {
			if len(m.step(s, lo)) > 0 {
				legal = true
				break
			}
		}
		if !legal && (culprit < 0 || lo.ret < lops[culprit].ret) {
			culprit = i
		}
	}
	return culprit
}

// describeWindow puts into v the last few linearized ops, the culprit,
// the ops concurrent with it and the holder's acquire, in call order.
func describeWindow(lops []*lockOp, longest []int, done []bool, culprit int, holder *lockOp, v *Violation) {
	c := lops[culprit]
	window := map[int]bool{culprit: true}
	for j := max(0, len(longest)-4); j < len(longest); j++ {
		window[longest[j]] = true
	}
	for i, lo := range lops {
		if !done[i] && lo.call <= c.orig && lo.orig >= c.call && len(window) < 12 {
			window[i] = true
		}
	}
	if i := slices.Index(lops, holder); i >= 0 {
		window[i] = true
	}
	ids := make([]int, 0, len(window))
	for id := range window {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sort.SliceStable(ids, func(a, b int) bool { return lops[ids[a]].call < lops[ids[b]].call })
	v.Window = [2]int64{lops[ids[0]].call, lops[ids[0]].orig}
	for _, id := range ids {
		lo := lops[id]
		v.Ops = append(v.Ops, lo.index)
		v.Window[1] = max(v.Window[1], lo.orig)
		mark := "  "
		if id == culprit {
			mark = "=>"
		}
		v.Explanation = append(v.Explanation, mark+" "+describeOp(lo))
	}
}

func containsState(ss []leaseState, s leaseState) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func describeOp(lo *lockOp) string {
	s := fmt.Sprintf("#%d p%d %s %s, called %s, returned %s, lease %s", lo.index, lo.process, lo.f, lo.typ,
		history.Seconds(lo.call), history.Seconds(lo.orig), short(lo.token))
	if lo.f != history.Release {
		s += ", ttl " + time.Duration(lo.ttl).String()
	}
	if lo.add {
		s += " added to what the lease had left"
	}
	if lo.typ == history.Info {
		s += " (indeterminate: may take effect until " + history.Seconds(lo.ret) + ")"
	}
	return s
}

// reason says in words why op cannot follow state s.
func (m leaseModel) reason(s leaseState, op *lockOp, byToken map[string]*lockOp) string {
	who := fmt.Sprintf("p%d %s %s at %s", op.process, op.f, op.typ, history.Seconds(op.orig))
	holder := "an unknown client's lease"
	eMin, eMax := s.eRange()
	if h := byToken[s.holder]; h != nil {
		holder = fmt.Sprintf("p%d's lease %s (acquired %s, ttl %v)", h.process, short(h.token), history.Seconds(h.call), time.Duration(h.ttl))
	}
	eps := time.Duration(m.eps)
	switch {
	case op.f == history.Acquire && op.typ != history.Fail:
		return fmt.Sprintf("%s while %s could not yet have expired (earliest expiry %s, tolerance %v): two holders at once",
			who, holder, history.Seconds(eMin), eps)
	case op.f == history.Acquire && !s.held():
		return fmt.Sprintf("%s though the lock was free: nothing held it", who)
	case op.f == history.Acquire:
		return fmt.Sprintf("%s though %s had expired by %s (tolerance %v): the key outlived its TTL (stuck lock)",
			who, holder, seconds(eMax), eps)
	case op.typ != history.Fail && !s.held():
		return fmt.Sprintf("%s of lease %s, but the lock was free: it released or extended a lease it did not hold", who, short(op.token))
	case op.typ != history.Fail && s.holder != op.token:
		return fmt.Sprintf("%s of lease %s while the lock was held by %s: it %s someone else's lease", who, short(op.token), holder, pastTense(op.f))
	case op.typ != history.Fail:
		return fmt.Sprintf("%s of lease %s, which had expired by %s (tolerance %v)", who, short(op.token), seconds(eMax), eps)
	default:
		return fmt.Sprintf("%s of lease %s though that lease could not yet have expired (earliest expiry %s): the lock lost a live lease",
			who, short(op.token), history.Seconds(eMin))
	}
}

func pastTense(f history.Func) string {
	if f == history.Extend {
		return "extended"
	}
	return string(f) + "d"
}
