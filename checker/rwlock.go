package checker

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// readWrite is the read-write lock's shape (DESIGN "Shapes beyond the
// mutex"): a write acquire is granted while no lease is held and refused
// while one is; a read acquire is granted while no write lease is held,
// and refused while one is or, for a lock that declares writer
// preference (writerPref), while a write acquire of the key is in flight.
// Release and extend are per lease.
type readWrite struct{ writerPref bool }

func (s readWrite) String() string {
	if s.writerPref {
		return "read-write lock, writers preferred"
	}
	return "read-write lock"
}

func (s readWrite) legal(held []permitLease, op *permitOp, ok, busy bool) bool {
	if op.f != history.Acquire {
		return perLease(held, op, ok)
	}
	writer := false
	for _, l := range held {
		writer = writer || l.write
	}
	switch {
	case op.write && ok:
		return len(held) == 0
	case op.write:
		return len(held) > 0
	case ok:
		return !writer
	}
	return writer || s.writerPref && busy
}

// implicants: a write grant needs every lease gone, a read grant every
// write lease; a write refusal one lease held, a read refusal one write
// lease held, or a writer in flight.
func (s readWrite) implicants(leases []permitLease, op *permitOp, ok, busy bool) []cube {
	if op.f != history.Acquire {
		return perLeaseImplicants(leases, op, ok)
	}
	var all, writes uint64
	var out []cube
	for j, l := range leases {
		bit := uint64(1) << j
		all |= bit
		if l.write {
			writes |= bit
		}
		if !ok && (op.write || l.write) {
			out = append(out, cube{bit, bit})
		}
	}
	switch {
	case ok && op.write:
		return []cube{{0, all}}
	case ok:
		return []cube{{0, writes}}
	case !op.write && s.writerPref && busy:
		return []cube{{}}
	}
	return out
}

// ReadWrite finds, as the protected resource saw them, a write lease's
// section (accepted write) overlapping another lease's: readers' sections
// may overlap each other. A section's lease is read or write as its
// acquire says (history.Op.Access; a lease no acquire names counts as a
// reader, so that it alone never makes a violation).
func ReadWrite(ops []history.Op) Result {
	res := sectionCheck("read-write", ops, func(key string, in *sections, w *history.Op, _ int) string {
		entering := in.write[leaseOf(w)]
		if in.leases < 2 || !entering && in.writers == 0 {
			return ""
		}
		who := "a reader"
		if entering {
			who = "a writer"
		}
		return fmt.Sprintf("writer overlapped on %s: p%d (lease %s, %s) entered its section at %s while %s were in theirs",
			key, w.Process, short(w.Token), who, history.Seconds(w.Call), in.describe(w))
	})
	res.Figures["writer_overlaps"] = int64(res.ViolationCount)
	return res
}
