package checker

import (
	"context"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"slices"
)

// Finding a linearization when ops are slow. porcupine tries the ops that
// may go next in the order they were called. When ops' intervals reach
// across many leases (a slow lock process, a blocking acquire, a client
// starved on a busy machine) the op called first is rarely the one that
// took effect first, and porcupine backtracks through the leases' orders:
// the 80 ok ops of a correct lock whose ops reach ten TTLs either side
// were not linearized in 10 s (BenchmarkLinearizable_SlowOps_Wide_Porcupine).
//
// edfOrder searches the same space, depth first: the ops that may go next
// are those called no later than the earliest return among the ops not
// yet placed (an op placed after one that returned before it was called
// would take effect before it), and the state is the set of the model's
// states, as porcupine's. It tries the candidates in the order of their
// return, earliest first: the op whose interval closes first is the one
// that must take effect soonest, the rule that schedules intervals
// (earliest deadline first). A correct lock's ops then go in almost
// without backtracking. A prefix (its set of ops) reached again in a state
// reached before is not searched again.
//
// It only finds, never refutes: the order it returns is replayed through
// the model and its timeline re-checked with numbers (witness.go) before
// it proves anything; and when it gives up (its step limit, or the
// context), the caller asks porcupine, whose answer decides. It remembers
// prefixes by hash alone (a collision could prune a real linearization,
// never admit a false one), so its shortcuts can cost time, never a
// verdict.

// edfSteps bounds edfOrder's search of n ops: a correct lock's key needs
// about n steps when its ops are quick, and up to a few thousand per op
// when they reach ten TTLs either side with indeterminate ops among them
// (genSlowInfoWithin: 2 million for 140 ops); a step costs about 0.3 µs,
// so the bound is a second or two, where porcupine would search the same
// orders for far longer.
func edfSteps(n int) int { return min(4096*n+65536, 1<<22) }

// edfOrder returns a linearization of ops (indexes into ops, in order), or
// nil if it found none within limit steps or before ctx ended; exhausted
// says it searched every order (but those its hashes pruned) and found
// none.
func (m leaseModel) edfOrder(ctx context.Context, ops []*lockOp, limit int) (lin []int, exhausted bool) {
	n := len(ops)
	if n == 0 {
		return []int{}, false
	}
	e := newEDF(m, ops)
	calls, rets, word, live := e.calls, e.rets, e.word, e.live
	candidates := e.candidates
	type frame struct {
		set   stateSet
		cands []int
		next  int
	}
	stack := []frame{{set: stateSet{}.add(initialState()), cands: candidates()}}
	lin = make([]int, 0, n)
	var prefix uint64
	seen := map[[2]uint64]struct{}{}
	for steps := 0; len(stack) > 0; {
		f := &stack[len(stack)-1]
		if f.next == len(f.cands) {
			stack = stack[:len(stack)-1]
			if len(lin) > 0 {
				id := lin[len(lin)-1]
				lin = lin[:len(lin)-1]
				calls.relink(id)
				rets.relink(id)
				live.place(ops[id], -1)
				prefix ^= word[id]
			}
			continue
		}
		id := f.cands[f.next]
		f.next++
		if steps++; steps > limit || steps&1023 == 0 && ctx.Err() != nil {
			return nil, false
		}
		live.place(ops[id], 1)
		next := live.keep(m.stepSet(f.set, ops[id]))
		if len(next) == 0 {
			live.place(ops[id], -1)
			continue
		}
		at := [2]uint64{prefix ^ word[id], next.hash()}
		if _, ok := seen[at]; ok {
			live.place(ops[id], -1)
			continue
		}
		seen[at] = struct{}{}
		lin = append(lin, id)
		if len(lin) == n {
			return lin, false
		}
		calls.unlink(id)
		rets.unlink(id)
		prefix ^= word[id]
		stack = append(stack, frame{set: next, cands: candidates()})
	}
	return nil, true
}

// edf is edfOrder's state outside its stack: two circular lists of the
// ops not placed, with sentinel n: by call (the candidates are a prefix
// of it) and by return (its head is the earliest return). Placing unlinks
// an op; backtracking relinks it, in the reverse order, which restores
// both lists exactly. A prefix's hash is the xor of its ops' random words.
type edf struct {
	ops         []*lockOp
	calls, rets ring
	word        []uint64
	due         []int64
	live        *liveTokens
}

func newEDF(m leaseModel, ops []*lockOp) *edf {
	n := len(ops)
	byCall := idsSorted(n, func(a, b int) int {
		return cmpInt2(ops[a].call, ops[b].call, ops[a].ret, ops[b].ret)
	})
	byRet := idsSorted(n, func(a, b int) int {
		return cmpInt2(ops[a].ret, ops[b].ret, ops[a].call, ops[b].call)
	})
	r := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	word := make([]uint64, n)
	for i := range word {
		word[i] = r.Uint64()
	}
	return &edf{ops: ops, calls: newRing(byCall), rets: newRing(byRet), word: word, due: edfDue(m, ops), live: newLiveTokens(ops)}
}

// candidates are the ops that may go next, in the order tried: called no
// later than the earliest return among the ops not placed, soonest due
// first.
func (e *edf) candidates() []int {
	ops, n := e.ops, len(e.ops)
	minRet := ops[e.rets.next[n]].ret
	var c []int
	for id := e.calls.next[n]; id != n && ops[id].call <= minRet; id = e.calls.next[id] {
		c = append(c, id)
	}
	slices.SortFunc(c, func(a, b int) int { return cmpInt2(e.due[a], e.due[b], ops[a].ret, ops[b].ret) })
	return c
}

// ring is a circular doubly linked list of 0..n-1 with sentinel n, from
// which ops are unlinked and relinked in reverse order (dancing links).
type ring struct{ next, prev []int }

func newRing(order []int) ring {
	n := len(order)
	r := ring{next: make([]int, n+1), prev: make([]int, n+1)}
	at := n
	for _, id := range order {
		r.next[at], r.prev[id] = id, at
		at = id
	}
	r.next[at], r.prev[n] = n, at
	return r
}

func (r ring) unlink(id int) {
	r.next[r.prev[id]], r.prev[r.next[id]] = r.next[id], r.prev[id]
}

func (r ring) relink(id int) {
	r.next[r.prev[id]], r.prev[r.next[id]] = id, id
}

func idsSorted(n int, cmp func(a, b int) int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, cmp)
	return ids
}

func cmpInt2(a1, b1, a2, b2 int64) int {
	if c := cmpInt(a1, b1); c != 0 {
		return c
	}
	return cmpInt(a2, b2)
}

// edfDue is the order in which edfOrder tries candidates: an op's return,
// but an acquire's is the earliest its lease could end (its ok release's
// call, or its expiry: call + ttl - eps), since taking a lease first
// delays every other acquire until then.
func edfDue(m leaseModel, ops []*lockOp) []int64 {
	end := map[string]int64{}
	for _, o := range ops {
		if o.f == history.Release && o.typ == history.OK {
			end[o.token] = max(end[o.token], o.call)
		}
	}
	due := make([]int64, len(ops))
	for i, o := range ops {
		due[i] = o.ret
		if o.f == history.Acquire && o.typ != history.Fail {
			e, ok := end[o.token]
			if !ok {
				e = o.call + o.ttl - m.eps
			}
			due[i] = max(o.call, e)
		}
	}
	return due
}

// liveTokens prunes edfOrder's dead ends early: once a token's every
// acquire is placed and one took effect, an ok release or extend of it
// still to come needs it to be the holder from now until then (nothing
// else gives the key back to it). Without this, a lease replaced at its
// expiry while its own release was still to come is found dead only when
// that release is the last candidate left, deep below.
type liveTokens struct {
	acq, pend map[string]int // unplaced acquires that may take effect; unplaced ok releases and extends
	live      map[string]bool
}

func newLiveTokens(ops []*lockOp) *liveTokens {
	l := &liveTokens{acq: map[string]int{}, pend: map[string]int{}, live: map[string]bool{}}
	for _, o := range ops {
		l.count(o, 1)
	}
	return l
}

func (l *liveTokens) count(o *lockOp, d int) {
	switch {
	case o.f == history.Acquire && o.typ != history.Fail:
		l.acq[o.token] += d
	case o.typ == history.OK:
		l.pend[o.token] += d
	}
}

// place records o placed (d = 1) or taken back (d = -1).
func (l *liveTokens) place(o *lockOp, d int) {
	l.count(o, -d)
	if l.acq[o.token] == 0 && l.pend[o.token] > 0 {
		l.live[o.token] = true
	} else {
		delete(l.live, o.token)
	}
}

// keep returns the members of set in which every live token holds the key.
func (l *liveTokens) keep(set stateSet) stateSet {
	if len(l.live) == 0 {
		return set
	}
	var out stateSet
	for _, x := range set {
		ok := true
		for tok := range l.live {
			ok = ok && x.s.holder == tok
		}
		if ok {
			out = append(out, x)
		}
	}
	return out
}
