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

// readWriteShape is a read-write lock's: acquires that name their
// access, judged by the readWrite model and, at the resource, no
// writer's section beside another lease's.
var readWriteShape = Shape{Name: "rwlock", Of: HistoryReadWrite, Linearizable: linearizableReadWrite, AtResource: readWriteAtResource, peaks: true,
	figures: []string{WriterTriedOverReaders, ReaderTriedOverWriter},
	coverage: func(c shapeCounts) {
		c.cov[WriterTriedOverReaders], c.cov[ReaderTriedOverWriter] = triedOverOtherMode(c.acquires, c.keys, c.o)
	}}

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
	return linearizableShape(ctx, ops, opt, readWrite{}, surelyRefusedRW(false))
}

// surelyRefusedRW drops from one key's ops of a read-write lock
// (writerPref: one that declares writer preference) each definite
// refusal at some instant of whose interval a lease that refuses it was
// surely held (any lease for a write acquire, a write lease for a read
// acquire), then each refusal whose interval holds that of one kept whose
// legality implies its own (nestedWithin): a write refusal holding any
// refusal's (a write lease held refuses a write too), a read refusal
// holding a read refusal's; under writer preference a read refusal may
// be legal for a writer in flight, so there only write refusals holding
// write refusals go. Each is exact as surelyRefused is: such a refusal is
// legal at that instant in every timeline, and changes no state. A hot
// key's contention is mostly such refusals.
func surelyRefusedRW(writerPref bool) func(ops []*permitOp, eps int64) ([]*permitOp, int) {
	return func(ops []*permitOp, eps int64) ([]*permitOp, int) {
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
		longestAll, longestWrite := longestSpan(all), longestSpan(writes)
		out := ops[:0:0]
		for _, o := range ops {
			if o.f == history.Acquire && o.typ == history.Fail {
				if o.write && heldWithin(all, longestAll, o) > 0 || !o.write && heldWithin(writes, longestWrite, o) > 0 {
					continue
				}
			}
			out = append(out, o)
		}
		write := func(o *permitOp) bool { return o.write }
		read := func(o *permitOp) bool { return !o.write }
		if writerPref {
			out, _ = nestedWithin(out, write, write)
		} else {
			out, _ = nestedWithin(out, read, read)
			out, _ = nestedWithin(out, write, func(*permitOp) bool { return true })
		}
		return out, len(ops) - len(out)
	}
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
