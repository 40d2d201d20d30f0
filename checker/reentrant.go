package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// The reentrant shape (DESIGN "Shapes beyond the mutex"): a lock's token
// names its owner, and one owner's acquisitions share it. At an instant
// t, with the owner's lease held or gone as the timeline has it:
//
//	acquire ok    legal iff no other owner's lease is held: the owner's
//	              own held lease counts one more hold and is set anew
//	              (E = t + ttl, as Redisson's RLock and
//	              examples/specs/reentrant-hash.toml PEXPIRE on re-entry);
//	              otherwise a new lease of one hold (a re-entry granted on
//	              a key that had expired starts a count of 1: the lease
//	              contract allows it, the resource check judges it)
//	acquire fail  legal iff another owner's lease is held
//	release ok    legal iff the owner's lease is held: one hold fewer, the
//	              key free at none
//	release fail  legal iff it is not held (and then it is gone)
//	extend        per lease, as the mutex's; the holds unchanged
//
// A grant needs every other owner's lease gone, so after any op at most
// one lease is possibly held: a state is the mutex's (leaseState: the
// owner, its accumulated TTL and the closed DBM over (0, s, l)) with the
// owner's hold count. The model is the mutex's with one more fork: an
// owner's grant while its own lease may be held or gone is two states,
// one hold more with the lease set anew, or a count of 1 (the lease had
// ended, so t >= E - eps). Each branch adds only difference bounds and
// projects as the mutex's does, so the states after a sequence of ops are
// exactly its feasible timelines, counts included: the model is exact,
// as TestReentrant_AgreesWithOracle proves against a brute-force oracle
// of the table with numbers.

// reentrantState is one key's state: a lease (or none) and its holds.
type reentrantState struct {
	lease leaseState
	holds int
}

// reentrantModel is the reentrant shape with clock tolerance eps.
type reentrantModel struct{ m leaseModel }

func (reentrantModel) String() string { return "reentrant lock" }

// reentrantBranch is one reading of the owner's lease at t: held (the op
// needs t <= E + eps), gone (t >= E - eps), or neither said; then what
// the op does and the holds after it.
type reentrantBranch struct {
	held, gone bool
	out        outcome
	holds      int
}

// branches are op's readings in s, taking effect as ok (ok) or as a
// definite failure: none if it is illegal in s whatever its instant.
func (rm reentrantModel) branches(s reentrantState, op *lockOp, ok bool) []reentrantBranch {
	held := s.lease.held()
	mine := held && s.lease.holder == op.token
	switch {
	case op.f == history.Acquire && ok && mine:
		return []reentrantBranch{{held: true, out: sets, holds: s.holds + 1}, {gone: true, out: sets, holds: 1}}
	case op.f == history.Acquire && ok:
		return []reentrantBranch{{gone: held, out: sets, holds: 1}}
	case op.f == history.Acquire:
		if held && !mine {
			return []reentrantBranch{{held: true, out: keeps, holds: s.holds}}
		}
		return nil
	case ok && !mine: // release or extend ok of a lease not the holder's
		return nil
	case ok && op.f == history.Release:
		if s.holds <= 1 {
			return []reentrantBranch{{held: true, out: frees}}
		}
		return []reentrantBranch{{held: true, out: keeps, holds: s.holds - 1}}
	case ok && op.add:
		return []reentrantBranch{{held: true, out: adds, holds: s.holds}}
	case ok:
		return []reentrantBranch{{held: true, out: sets, holds: s.holds}}
	case mine: // release or extend fail of the holder's lease: it had ended
		return []reentrantBranch{{gone: true, out: frees}}
	}
	return []reentrantBranch{{out: keeps, holds: s.holds}}
}

// apply returns the states after op took effect in s as ok (ok) or as a
// definite failure; none if that is impossible.
func (rm reentrantModel) apply(s reentrantState, op *lockOp, ok bool) []reentrantState {
	var out []reentrantState
	for _, b := range rm.branches(s, op, ok) {
		x := rm.m.extend(s.lease, op)
		if b.held {
			x[vNow][vSet] = min(x[vNow][vSet], s.lease.d+rm.m.eps) // t <= E + eps
		}
		if b.gone {
			x[vSet][vNow] = min(x[vSet][vNow], rm.m.eps-s.lease.d) // t >= E - eps
		}
		if !closeDBM(&x) {
			continue
		}
		n := reentrantState{lease: rm.m.project(s.lease, op, b.out, &x), holds: b.holds}
		if !n.lease.held() {
			n.holds = 0
		}
		out = append(out, n)
	}
	return out
}

// step returns every state op can lead to from s. An info op took effect
// as ok or never: as a failure it would leave s as it is, or free the
// owner's lease that had ended, which s (its lease free to end when a
// later op needs it gone) admits too.
func (rm reentrantModel) step(s reentrantState, op *lockOp) []reentrantState {
	if op.typ != history.Info {
		return rm.apply(s, op, op.typ == history.OK)
	}
	return append([]reentrantState{s}, rm.apply(s, op, true)...)
}

// reentrantSet is the model's state for porcupine: every state the ops
// so far can have led to, sorted by hash, none within another (as
// stateSet for the mutex: a state admitting no timeline another does not
// changes no verdict).
type reentrantSet []hashedReentrant

type hashedReentrant = hashed[reentrantState]

func (s reentrantState) hash() uint64 {
	return (s.lease.hash() ^ uint64(s.holds)) * 0x9e3779b97f4a7c15
}

// within reports whether every timeline a admits, b admits too.
func (a *reentrantState) within(b *reentrantState) bool {
	return a.holds == b.holds && a.lease.within(&b.lease)
}

func (set reentrantSet) add(s reentrantState) reentrantSet { return addState(set, s) }

func (set reentrantSet) equal(o reentrantSet) bool {
	return slices.EqualFunc(set, o, func(a, b hashedReentrant) bool { return a.h == b.h && a.s == b.s })
}

func (set reentrantSet) hash() uint64 {
	var h uint64
	for _, x := range set {
		h = (h ^ x.h) * 0x9e3779b97f4a7c15
	}
	return h
}

// porcupine wraps the reentrant model for porcupine, once, with typed
// inputs.
func (rm reentrantModel) porcupine() porcupine.Model {
	init := reentrantSet{}.add(reentrantState{lease: initialState()})
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			var next reentrantSet
			for _, x := range state.(reentrantSet) {
				for _, n := range rm.step(x.s, input.(*lockOp)) {
					next = next.add(n)
				}
			}
			return len(next) > 0, next
		},
		Equal:             func(a, b any) bool { return a.(reentrantSet).equal(b.(reentrantSet)) },
		Hash:              func(state any) uint64 { return state.(reentrantSet).hash() },
		DescribeOperation: func(input, _ any) string { return describeOpShort(input.(*lockOp)) },
		DescribeState: func(state any) string {
			var parts []string
			for _, x := range state.(reentrantSet) {
				parts = append(parts, x.s.String())
			}
			return strings.Join(parts, " or ")
		},
	}
}

func (s reentrantState) String() string {
	if !s.lease.held() {
		return "free"
	}
	return fmt.Sprintf("%s, %d holds", s.lease, s.holds)
}
