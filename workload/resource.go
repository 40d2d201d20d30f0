package workload

import (
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// Resource is the protected resource: the thing a lock exists to guard. It
// lives in process and records each critical section as one write op whose
// call is the entry and whose return is the exit. It accepts every write; a
// double holder shows as two accepted writes on one key that overlap.
type Resource struct {
	record func(history.Op)
}

func (r *Resource) write(process int, l lockimpl.Lease, call, ret int64) {
	r.record(history.Op{Process: process, F: history.Write, Type: history.OK, Key: l.Key,
		Token: l.Token, Fence: l.Fence, Call: call, Return: ret})
}
