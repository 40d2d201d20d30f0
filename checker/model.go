package checker

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// The lease model is defined by a timeline (README.md "The
// checkers"): every op that took effect did so at one
// instant t, call <= t <= return (return + horizon for info ops), instants
// non-decreasing in linearization order, and a lease set at instant s
// expires at E = s + d, d its TTL plus the TTLs additive extends added
// since. The instants are unknowns, so a state carries the constraints
// they satisfy, not numbers.
//
// Every constraint is a difference bound (t - x <= c), and only three
// quantities can appear in a later op's constraint: the origin (absolute
// times), s (the instant that set the current lease) and l (the instant of
// the last op). So a state is a difference-bound matrix over (0, s, l),
// kept closed (every bound as tight as the others imply). A step adds t,
// constrains it, closes the 4x4 matrix (infeasible iff a diagonal entry
// goes negative), and projects the old l, and the old s when the lease is
// replaced or freed, away. Projection of a closed DBM is its sub-matrix,
// and it is exact for difference constraints (Fourier-Motzkin never
// leaves the class), so the set of states after a sequence of ops is
// exactly the set of feasible timelines for it: the model is exact, not an
// approximation. Closed DBMs are canonical, so equal constraint sets are
// equal states, which porcupine's cache needs.

// Variables of a state's matrix, and t, the instant of the op being applied.
const (
	vZero = iota
	vSet  // s: the instant that set the current lease
	vLast // l: the instant of the last op that took effect
	vNow  // t: the op being applied (only inside a step)
)

// inf is an absent bound. Finite bounds stay far below it: times are at
// most history.MaxTime, TTLs at most history.MaxTTLms ms, the tolerance
// and horizon are capped by Options.Resolved (at MaxDuration), and d by maxD; sums of a
// few of them cannot reach 2^62.
const inf = int64(1) << 62

// maxD caps a lease's accumulated TTL: a lease longer than any history is
// as good as one that never expires.
const maxD = int64(1) << 57

func addBound(a, b int64) int64 {
	if a >= inf || b >= inf {
		return inf
	}
	return a + b
}

// dbm is a closed difference-bound matrix over (0, s, l): b[i][j] bounds
// x_i - x_j from above.
type dbm [3][3]int64

// leaseState is the state of one key: the holder's token ("" = free), its
// accumulated TTL d (E = s + d), and the constraints on s and l. When the
// key is free, s is unconstrained (its bounds are inf).
type leaseState struct {
	holder string
	d      int64
	b      dbm
}

func (s leaseState) held() bool { return s.holder != "" }

// sRange is the earliest and latest instant that can have set the lease.
func (s leaseState) sRange() (int64, int64) { return -s.b[vZero][vSet], s.b[vSet][vZero] }

// eRange is the earliest and latest expiry of the current lease.
func (s leaseState) eRange() (int64, int64) {
	lo, hi := s.sRange()
	return lo + s.d, addBound(hi, s.d)
}

func initialState() leaseState {
	var s leaseState
	for i := range s.b {
		for j := range s.b[i] {
			if i != j {
				s.b[i][j] = inf
			}
		}
	}
	return s
}

// lockOp is the model's input: one acquire, release or extend.
type lockOp struct {
	index   int64
	process int
	f       history.Func
	typ     history.Type
	token   string
	ttl     int64 // ns
	// add marks an extend that adds ttl to what the lease had left.
	add  bool
	call int64
	// ret is when the op returned; for info ops, the latest moment it may
	// still take effect (return + horizon).
	ret int64
	// orig is the op's recorded return.
	orig int64
	// gaps, on an orphan whose interval narrowOrphans narrowed, are the
	// instants inside [call, ret] still closed to it (disjoint, in order).
	gaps []openSpan
}

// segments are the stretches of [call, ret] open to lo: the whole of it
// unless narrowOrphans found gaps.
func (lo *lockOp) segments() [][2]int64 {
	if len(lo.gaps) == 0 {
		return [][2]int64{{lo.call, lo.ret}}
	}
	var out [][2]int64
	from := lo.call
	for _, g := range lo.gaps {
		out = append(out, [2]int64{from, g.from})
		from = g.to
	}
	return append(out, [2]int64{from, lo.ret})
}

// leaseModel is the timeline semantics with clock tolerance eps.
type leaseModel struct {
	eps int64
}

// outcome is what an op did to the lease, once legal.
type outcome int

const (
	keeps outcome = iota // same lease (or still free)
	adds                 // same lease, its TTL added to d
	sets                 // a new lease set at t
	frees                // the key is free
)

// constrain adds to x (a 4x4 matrix whose t row and column are set up)
// the conditions under which op, taking effect as ok (ok) or as a definite
// failure, is legal in state s, and says what it does. legal is false when
// the op is illegal in s whatever its instant.
func (m leaseModel) constrain(x *[4][4]int64, s leaseState, op *lockOp, ok bool) (out outcome, legal bool) {
	mine := s.held() && s.holder == op.token
	// t >= E - eps, i.e. s - t <= eps - d; t <= E + eps, i.e. t - s <= d + eps.
	mayBeGone := func() { x[vSet][vNow] = min(x[vSet][vNow], m.eps-s.d) }
	mayBeHeld := func() { x[vNow][vSet] = min(x[vNow][vSet], s.d+m.eps) }
	switch {
	case op.f == history.Acquire && ok:
		if s.held() {
			mayBeGone()
		}
		return sets, true
	case op.f == history.Acquire:
		if !s.held() {
			return keeps, false
		}
		mayBeHeld()
		return keeps, true
	case ok: // release or extend ok
		if !mine {
			return keeps, false
		}
		mayBeHeld()
		switch {
		case op.f == history.Release:
			return frees, true
		case op.add:
			return adds, true
		}
		return sets, true
	default: // release or extend fail
		if !mine {
			return keeps, true
		}
		mayBeGone()
		return frees, true
	}
}

// apply returns the state after op took effect in s as ok (ok) or as a
// definite failure, and whether that is possible.
func (m leaseModel) apply(s leaseState, op *lockOp, ok bool) (leaseState, bool) {
	x := m.extend(s, op)
	out, legal := m.constrain(&x, s, op, ok)
	if !legal || !closeDBM(&x) {
		return s, false
	}
	return m.project(s, op, out, &x), true
}

// extend returns s's matrix with t added: call <= t <= ret, t >= l.
func (m leaseModel) extend(s leaseState, op *lockOp) [4][4]int64 {
	var x [4][4]int64
	for i := 0; i < 3; i++ {
		copy(x[i][:3], s.b[i][:])
		x[i][vNow], x[vNow][i] = inf, inf
	}
	x[vNow][vZero], x[vZero][vNow] = op.ret, -op.call
	x[vLast][vNow] = 0
	return x
}

// project keeps (0, s', l' = t) of the closed x.
func (m leaseModel) project(s leaseState, op *lockOp, out outcome, x *[4][4]int64) leaseState {
	var n leaseState
	idx := [3]int{vZero, vSet, vNow}
	switch out {
	case sets:
		n.holder, n.d, idx[vSet] = op.token, op.ttl, vNow
	case keeps:
		n.holder, n.d = s.holder, s.d
	case adds:
		n.holder, n.d = s.holder, min(s.d+op.ttl, maxD)
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			n.b[i][j] = x[idx[i]][idx[j]]
		}
	}
	if !n.held() {
		for i := 0; i < 3; i++ {
			if i != vSet {
				n.b[i][vSet], n.b[vSet][i] = inf, inf
			}
		}
		n.d = 0
	}
	return n
}

// closeDBM tightens x to its closure (Floyd-Warshall) and reports whether
// its constraints are satisfiable. It stops at the first negative cycle,
// so no sum ever adds more than a few finite bounds.
func closeDBM(x *[4][4]int64) bool {
	for k := 0; k < 4; k++ {
		for i := 0; i < 4; i++ {
			if x[i][k] >= inf {
				continue
			}
			for j := 0; j < 4; j++ {
				if v := addBound(x[i][k], x[k][j]); v < x[i][j] {
					x[i][j] = v
				}
			}
		}
		for i := 0; i < 4; i++ {
			if x[i][i] < 0 {
				return false
			}
		}
	}
	return true
}

// step returns every state op can lead to from s; none if op is illegal.
// An info op either took effect as ok (up to its horizon) or never took
// effect at all. (Taking effect as a failure adds nothing: it leaves the
// state unchanged, or frees an own lease that may already be gone, and
// the unchanged state admits everything that free one does.)
func (m leaseModel) step(s leaseState, op *lockOp) []leaseState {
	switch op.typ {
	case history.OK, history.Fail:
		if n, ok := m.apply(s, op, op.typ == history.OK); ok {
			return []leaseState{n}
		}
	case history.Info:
		out := []leaseState{s}
		if n, ok := m.apply(s, op, true); ok && n != s {
			out = append(out, n)
		}
		return out
	}
	return nil
}

var hashSeed = maphash.MakeSeed()

func (s leaseState) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(s.holder)
	v := h.Sum64() ^ uint64(s.d)*0x9e3779b97f4a7c15
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			v = (v ^ uint64(s.b[i][j])) * 0xbf58476d1ce4e5b9
		}
	}
	return v
}

func (s leaseState) String() string {
	if !s.held() {
		return "free"
	}
	lo, hi := s.eRange()
	return fmt.Sprintf("held by %s, expires in [%s, %s]", short(s.holder), history.Seconds(lo), seconds(hi))
}

// seconds is history.Seconds, with inf shown as never.
func seconds(ns int64) string {
	if ns >= inf {
		return "never"
	}
	return history.Seconds(ns)
}

// stateSet is the model's state for porcupine: every state the ops so far
// can have led to (porcupine's powerset construction for a
// nondeterministic model, written out so that sets compare in linear
// time). Members are sorted by hash, and none is subsumed by another: a
// state whose holder and d equal another's and whose bounds are all no
// looser admits no timeline the other does not (a step only adds
// constraints), so dropping it changes no verdict.
type stateSet []hashedState

type hashedState = hashed[leaseState]

// hashed is a state of a set kept sorted by hash (stateSet, permitSet,
// reentrantSet), with its hash.
type hashed[S any] struct {
	h uint64
	s S
}

// subsumable is what addState asks of a state: whether every timeline it
// admits another admits too, and its hash.
type subsumable[S any] interface {
	*S
	within(*S) bool
	hash() uint64
}

// addState inserts s into set unless a member admits all it does, and
// drops the members s admits all of, keeping set sorted by hash.
func addState[S any, P subsumable[S]](set []hashed[S], s S) []hashed[S] {
	for i := range set {
		if P(&s).within(&set[i].s) {
			return set
		}
	}
	out := set[:0]
	for _, x := range set {
		if !P(&x.s).within(&s) {
			out = append(out, x)
		}
	}
	hs := hashed[S]{P(&s).hash(), s}
	i, _ := slices.BinarySearchFunc(out, hs.h, func(x hashed[S], h uint64) int { return cmp.Compare(x.h, h) })
	return slices.Insert(out, i, hs)
}

// within reports whether every timeline a admits, b admits too.
func (a *leaseState) within(b *leaseState) bool {
	if a.holder != b.holder || a.d != b.d {
		return false
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if a.b[i][j] > b.b[i][j] {
				return false
			}
		}
	}
	return true
}

// add inserts s unless a member admits all it does, and drops the members
// s admits all of.
func (set stateSet) add(s leaseState) stateSet { return addState(set, s) }

func (set stateSet) equal(o stateSet) bool {
	if len(set) != len(o) {
		return false
	}
	for i := range set {
		if set[i].h != o[i].h || set[i].s != o[i].s {
			return false
		}
	}
	return true
}

// stepSet returns every state op can lead to from a member of set; none
// if op is illegal in all of them.
func (m leaseModel) stepSet(set stateSet, op *lockOp) stateSet {
	var next stateSet
	for _, x := range set {
		for _, n := range m.step(x.s, op) {
			next = next.add(n)
		}
	}
	return next
}

func (set stateSet) hash() uint64 {
	var h uint64
	for _, x := range set {
		h = (h ^ x.h) * 0x9e3779b97f4a7c15
	}
	return h
}

// porcupine wraps the model for porcupine, once, with typed inputs.
func (m leaseModel) porcupine() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return stateSet{}.add(initialState()) },
		Step: func(state, input, _ any) (bool, any) {
			next := m.stepSet(state.(stateSet), input.(*lockOp))
			return len(next) > 0, next
		},
		Equal:             func(a, b any) bool { return a.(stateSet).equal(b.(stateSet)) },
		Hash:              func(state any) uint64 { return state.(stateSet).hash() },
		DescribeOperation: func(input, _ any) string { return describeOpShort(input.(*lockOp)) },
		DescribeState: func(state any) string {
			var parts []string
			for _, x := range state.(stateSet) {
				parts = append(parts, x.s.String())
			}
			return strings.Join(parts, " or ")
		},
	}
}

func describeOpShort(op *lockOp) string {
	s := fmt.Sprintf("p%d %s %s %s", op.process, op.f, op.typ, short(op.token))
	if op.f != history.Release {
		s += " ttl " + time.Duration(op.ttl).String()
	}
	return s
}

// reach bounds, for the coarse checks (liveness, expiredFail), how long
// the leases seen so far could keep their key: a lease's expiry is the
// instant of its last setter (acquire or replacing extend) plus that
// setter's TTL plus the TTLs of the additive extends that took effect
// after it, so it is at most the latest setter's latest instant plus its
// TTL, plus every additive extend's TTL of the same token, in whatever
// order they took effect (info ops need not take effect in call order).
type reach struct {
	set, add map[string]int64
	max      int64 // the bound over every lease seen; -inf if none
}

func newReach() *reach {
	return &reach{set: map[string]int64{}, add: map[string]int64{}, max: -inf}
}

// see records an acquire or extend that may have taken effect by hi, and
// returns the bound for its lease.
func (r *reach) see(token string, additive bool, hi, ttl int64) int64 {
	if additive {
		r.add[token] = min(r.add[token]+ttl, maxD)
	} else if e, ok := r.set[token]; !ok || hi+ttl > e {
		r.set[token] = hi + ttl
	}
	e, ok := r.set[token]
	if !ok {
		return -inf // extends of a lease never acquired hold nothing
	}
	e += r.add[token]
	r.max = max(r.max, e)
	return e
}
