package checker

import (
	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// A witness proves a key valid by construction: a timeline (an order, and
// an instant for every op that took effect) that satisfies every rule of
// the model. It is built from a linearization porcupine found for part of
// the key's ops (all but some failed acquires): replay picks, for each
// info op, whether it took effect, and instants picks concrete instants
// within the constraints. A failed acquire changes no state and is legal
// at any instant of its interval at which the key is held and not
// certainly gone, so, with the other instants fixed, it fits iff such an
// instant lies between two consecutive instants of the timeline (its own
// instant then keeps the order non-decreasing, and real-time order
// follows from instants lying within intervals). place returns the failed
// acquires that do not fit this timeline; none means the whole key is
// valid. One that does not fit may fit another timeline, so the caller
// then searches again with it included: a witness only ever proves
// validity, never refutes.

// pathStep is one op of a replayed linearization.
type pathStep struct {
	op   *lockOp
	took bool       // the op took effect (always, unless info)
	st   leaseState // the state after it
}

// replay runs ops in the order lin through the model, as porcupine's
// powerset construction does, remembering where each state came from, and
// returns one complete path. ok is false if lin is not a linearization.
func (m leaseModel) replay(ops []*lockOp, lin []int) (path []pathStep, ok bool) {
	type node struct {
		st     leaseState
		parent int
		took   bool
	}
	layers := make([][]node, len(lin)+1)
	layers[0] = []node{{st: initialState(), parent: -1}}
	for i, id := range lin {
		op := ops[id]
		var next []node
		add := func(st leaseState, parent int, took bool) {
			for i := range next {
				switch {
				case st.within(&next[i].st):
					return
				case next[i].st.within(&st):
					next[i] = node{st, parent, took}
					return
				}
			}
			next = append(next, node{st, parent, took})
		}
		for p, n := range layers[i] {
			if op.typ == history.Info {
				add(n.st, p, false)
			}
			if st, ok := m.apply(n.st, op, op.typ != history.Fail); ok {
				add(st, p, true)
			}
		}
		if len(next) == 0 {
			return nil, false
		}
		layers[i+1] = next
	}
	path = make([]pathStep, len(lin))
	cur := 0
	for i := len(lin); i > 0; i-- {
		n := layers[i][cur]
		path[i-1] = pathStep{op: ops[lin[i-1]], took: n.took, st: n.st}
		cur = n.parent
	}
	return path, true
}

// instants picks a concrete timeline for path: the instant of each op that
// took effect (t[i]) and the instant that set the lease held after each
// step (s[i+1]; s[0] is the initial state's). It goes backwards: the state
// after the last op is an exact projection of every constraint, so values
// chosen in it extend to the state before, and so on down (a closed DBM
// lets variables be fixed one at a time within the bounds that the fixed
// ones imply). Within those bounds it takes the earliest instant for an
// acquire and for the instant that set a lease, the latest for the rest,
// so that leases look held as long as they may: that is where failed
// acquires fit.
func (m leaseModel) instants(path []pathStep) (t, s []int64) {
	n := len(path)
	t, s = make([]int64, n), make([]int64, n+1)
	// last[k] is the last step before k that took effect: the op whose
	// instant is l in the state after k steps.
	last := make([]int, n+1)
	last[0] = -1
	for k := 0; k < n; k++ {
		last[k+1] = last[k]
		if path[k].took {
			last[k+1] = k
		}
	}
	stateAt := func(k int) leaseState {
		if k == 0 {
			return initialState()
		}
		return path[k-1].st
	}
	// Start from the state after the last op.
	var x [4][4]int64
	embed(&x, stateAt(n))
	var v timeVals
	if lt := last[n]; lt >= 0 {
		v.fix(&x, vLast, path[lt].op)
	}
	if stateAt(n).held() {
		v.fix(&x, vSet, nil)
	}
	s[n] = v.val[vSet]
	for k := n; k > 0; k-- {
		ps, prev := path[k-1], stateAt(k-1)
		if !ps.took {
			s[k-1] = s[k]
			continue
		}
		t[k-1] = v.val[vLast]
		x = m.extend(prev, ps.op)
		out, _ := m.constrain(&x, prev, ps.op, ps.op.typ != history.Fail)
		// Fix t, and s when the lease goes on; the rest is chosen anew.
		kept := prev.held() && (out == keeps || out == adds)
		old := v
		v = timeVals{}
		v.set(&x, vNow, old.val[vLast])
		if kept {
			v.set(&x, vSet, s[k])
		}
		closeDBM(&x)
		if prev.held() && !kept {
			v.fix(&x, vSet, nil)
		}
		if lt := last[k-1]; lt >= 0 {
			v.fix(&x, vLast, path[lt].op)
		}
		s[k-1] = v.val[vSet]
	}
	return t, s
}

// timeVals are concrete values of a matrix's variables (the origin is 0).
type timeVals struct {
	val   [4]int64
	fixed [4]bool
}

// set fixes variable i of x at value a, as constraints.
func (v *timeVals) set(x *[4][4]int64, i int, a int64) {
	x[i][vZero], x[vZero][i] = a, -a
	v.val[i], v.fixed[i] = a, true
}

// fix chooses variable i within the bounds the fixed variables imply: the
// earliest for an acquire or a lease's setter (op nil), the latest for
// any other op.
func (v *timeVals) fix(x *[4][4]int64, i int, op *lockOp) {
	lo, hi := -x[vZero][i], x[i][vZero]
	for j := 1; j < 4; j++ {
		if v.fixed[j] {
			lo = max(lo, v.val[j]-x[j][i])
			hi = min(hi, addBound(v.val[j], x[i][j]))
		}
	}
	a := lo
	if op != nil && op.f != history.Acquire || a <= -inf {
		a = hi
	}
	v.set(x, i, a)
}

// embed copies s's matrix into x, with t unused.
func embed(x *[4][4]int64, s leaseState) {
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			switch {
			case i == j:
				x[i][j] = 0
			case i == vNow || j == vNow:
				x[i][j] = inf
			default:
				x[i][j] = s.b[i][j]
			}
		}
	}
}

// timeline returns the ops of path that took effect, at instants t, as
// a concrete timeline, and whether it is one (settle) whose leases are
// those the model's states give (s[k+1] + d). A witness trusts a timeline
// only if it is, so it never rests on the DBM arithmetic alone.
func (m leaseModel) timeline(path []pathStep, t, s []int64) ([]event, bool) {
	var evs []event
	for k, ps := range path {
		if ps.took {
			evs = append(evs, event{op: ps.op, at: t[k]})
		}
	}
	if !m.settle(evs) {
		return nil, false
	}
	j := 0
	for k, ps := range path {
		if !ps.took {
			continue
		}
		ev := evs[j]
		j++
		if ev.holder != ps.st.holder || ev.holder != "" && ev.e != s[k+1]+ps.st.d {
			return nil, false
		}
	}
	return evs, true
}

// concrete re-checks path's timeline with numbers (timeline).
func (m leaseModel) concrete(path []pathStep, t, s []int64) bool {
	_, ok := m.timeline(path, t, s)
	return ok
}

// place returns the failed acquires of fails that fit nowhere in path's
// timeline, once orphans (orphan info acquires left out of path) are
// inserted where they give failed acquires a holder (cover).
func (m leaseModel) place(path []pathStep, fails, orphans []*lockOp) []*lockOp {
	t, s := m.instants(path)
	evs, ok := m.timeline(path, t, s)
	if !ok {
		return fails // not a timeline after all: prove nothing
	}
	_, left := m.cover(evs, fails, orphans)
	return left
}

// linearization returns a complete linearization of lops found by
// edfOrder or porcupine, or nil if neither finished or there is none.
// refutes says whether the caller takes "illegal" as a verdict: when it
// does not (a witness search of tightened ops), edfOrder's search run to
// its end is answer enough, and porcupine is not asked to search the same
// orders again; when it does, porcupine decides, since edfOrder remembers
// prefixes by hash.
func (c *keyCheck) linearization(lops []*lockOp, refutes bool) (porcupine.CheckResult, []int) {
	if len(lops) == 0 {
		return porcupine.Ok, []int{}
	}
	if c.skip&skipEDF == 0 {
		lin, exhausted := c.m.edfOrder(c.ctx, lops, edfSteps(len(lops)))
		switch {
		case lin != nil:
			return porcupine.Ok, lin
		case exhausted && !refutes:
			return porcupine.Illegal, nil
		}
	}
	r, info := c.search(lops, true)
	if r != porcupine.Ok {
		return r, nil
	}
	for _, l := range info.PartialLinearizations()[0] {
		if len(l) == len(lops) {
			return r, l
		}
	}
	return r, nil
}
