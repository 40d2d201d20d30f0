package workload

import (
	"sync"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// Resource is the protected resource: the thing a lock exists to guard. It
// lives in process and records each critical section as one write op whose
// call is the entry and whose return is the exit. For leases without a
// fencing token it accepts every write, so a double holder shows as two
// accepted writes on one key that overlap. For fenced leases it is the
// fenced resource: it rejects a write whose token is lower than the highest
// it accepted on the key (a write op of type fail).
type Resource struct {
	record func(history.Op)
	now    func() int64

	mu      sync.Mutex
	highest map[string]int64
}

func newResource(record func(history.Op), now func() int64) *Resource {
	return &Resource{record: record, now: now, highest: map[string]int64{}}
}

// enter starts a write and says whether the resource accepts it. The entry
// time is read under the lock, so accepted fences are in entry order.
func (r *Resource) enter(l lockimpl.Lease) (int64, bool) {
	if l.Fence == 0 {
		return r.now(), true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	call := r.now()
	if l.Fence < r.highest[l.Key] {
		return call, false
	}
	r.highest[l.Key] = l.Fence
	return call, true
}

// exit records the write op, with its process, times and flags, for
// lease l: accepted from call to return, or rejected at call.
func (r *Resource) exit(op history.Op, l lockimpl.Lease, accepted bool) {
	op.F, op.Type, op.Key, op.Token, op.Fence = history.Write, history.OK, l.Key, l.Token, l.Fence
	if !accepted {
		op.Type, op.Return, op.Error = history.Fail, op.Call, "stale fencing token"
	}
	r.record(op)
}
