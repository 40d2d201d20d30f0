package checker

import (
	"context"
	"fmt"

	"github.com/lockcheck/lockcheck/history"
)

// A read-write lock's history (DESIGN "Shapes beyond the mutex") is one
// whose acquires name their access (history.Op.Access; the strict
// reader takes no mix of shapes). It is judged under the checkers'
// names, as a semaphore's is: linearizable by the readWrite model,
// mutex by ReadWrite at the resource. The lock under test declares no
// writer preference (a lock that does is refused before it runs until
// its preference reaches the checker).

// HistoryReadWrite says ops are a read-write lock's: an acquire names
// its access.
func HistoryReadWrite(ops []history.Op) bool {
	for i := range ops {
		if ops[i].F == history.Acquire && ops[i].Access != "" {
			return true
		}
	}
	return false
}

// linearizableReadWrite is Linearizable for a read-write lock: each
// key's ops against readWrite's model, less its refusals that were
// surely legal (surelyRefusedRW).
func linearizableReadWrite(ctx context.Context, ops []history.Op, opt Options) Result {
	return linearizableShape(ctx, ops, opt, readWrite{}, surelyRefusedRW)
}

// surelyRefusedRW drops from one key's ops of a read-write lock each
// definite refusal during all of whose interval a lease that refuses it
// was surely held: any lease for a write acquire, a write lease for a
// read acquire. It is exact as surelyRefused is: such a refusal is legal
// at every instant of its interval in every timeline and changes no
// state. A hot key's contention is mostly such refusals.
func surelyRefusedRW(ops []*permitOp, eps int64) ([]*permitOp, int) {
	writers := map[string]bool{}
	var writeOps []*permitOp
	for _, o := range ops {
		if o.f == history.Acquire && o.write {
			writers[o.token] = true
		}
	}
	for _, o := range ops {
		if writers[o.token] {
			writeOps = append(writeOps, o)
		}
	}
	all, writes := surelyHeldSpans(ops, eps), surelyHeldSpans(writeOps, eps)
	out := ops[:0:0]
	for _, o := range ops {
		if o.f == history.Acquire && o.typ == history.Fail {
			by := writes
			if o.write {
				by = all
			}
			if heldThrough(by, o) > 0 {
				continue
			}
		}
		out = append(out, o)
	}
	return out, len(ops) - len(out)
}

// readWriteAtResource is the mutex checker for a read-write lock: no
// writer's section overlapping another lease's (ReadWrite), and the most
// leases in their sections at once (peak_holders).
func readWriteAtResource(ops []history.Op) Result {
	res := ReadWrite(ops)
	res.Name = "mutex"
	res.Figures["peak_holders"] = peakHolders(ops)
	res.Note = fmt.Sprintf("judged as a %s: no writer's section overlapping another lease's, readers' may overlap", readWrite{})
	return res
}
