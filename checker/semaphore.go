package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// semaphore is the shape of k permits (DESIGN "Shapes beyond the
// mutex"): an acquire is granted while fewer than k leases are held and
// refused while k are; a release or extend is per lease, as the mutex's.
// The mutex is k = 1.
type semaphore struct{ k int }

func (s semaphore) String() string { return fmt.Sprintf("semaphore of %d permits", s.k) }

func (s semaphore) legal(held []permitLease, op *permitOp, ok, _ bool) bool {
	switch {
	case op.f == history.Acquire && ok:
		return len(held) < s.k
	case op.f == history.Acquire:
		return len(held) >= s.k
	}
	return perLease(held, op, ok)
}

// implicants: a grant needs n - k + 1 of the n leases possibly held gone,
// a refusal k of them held.
func (s semaphore) implicants(leases []permitLease, op *permitOp, ok, _ bool) []cube {
	n := len(leases)
	switch {
	case op.f == history.Acquire && ok:
		return choose(n, n-s.k+1, false)
	case op.f == history.Acquire:
		return choose(n, s.k, true)
	}
	return perLeaseImplicants(leases, op, ok)
}

// perLease is the table's release and extend rows, every shape's: ok iff
// the op's lease is held, a failure iff it is not.
func perLease(held []permitLease, op *permitOp, ok bool) bool {
	mine := false
	for _, l := range held {
		mine = mine || l.token == op.token
	}
	return mine == ok
}

// Permits is the k a key's semaphore has, as its acquires declare it
// (history.Op.Permits; 1, a mutex, where none does).
func Permits(ops []*history.Op) int {
	k := 0
	for _, op := range ops {
		if op.F == history.Acquire {
			k = max(k, op.Permits)
		}
	}
	return max(k, 1)
}

// Semaphore finds, as the protected resource saw them, instants where
// more of a key's leases were in their sections (accepted writes) than
// the key has permits (Permits). A lease is (process, token), as for
// Mutex, and a write recorded on another machine's clock counts only
// where it surely was in its section.
func Semaphore(ops []history.Op) Result {
	res := sectionCheck("semaphore", ops, func(key string, in *sections, w *history.Op, k int) string {
		if in.leases <= k {
			return ""
		}
		return fmt.Sprintf("%d holders on %s, a semaphore of %d permits: p%d (lease %s) entered its section at %s while %s were in theirs",
			in.leases, key, k, w.Process, short(w.Token), history.Seconds(w.Call), in.describe(w))
	})
	res.Figures["over_admitted"] = int64(res.ViolationCount)
	return res
}
