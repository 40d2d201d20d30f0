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
// it accepted on the key (a write op of type fail), at a section's entry
// and, since a section is many writes, for the rest of a section that a
// higher token overtook (its write op ends there, cut short).
type Resource struct {
	record func(history.Op)
	now    func() int64

	mu      sync.Mutex
	highest map[string]int64
	open    map[string]*section // the fenced section last let in, by key
}

// section is one fenced critical section the resource let in. A section
// stands for many writes, each checked against the highest token: once a
// higher token is let in (cut), the section's later writes are rejected,
// so what it wrote ends there.
type section struct {
	fence int64
	cut   int64 // when a higher token was let in; 0: not yet
}

func newResource(record func(history.Op), now func() int64) *Resource {
	return &Resource{record: record, now: now, highest: map[string]int64{}, open: map[string]*section{}}
}

// enter starts a critical section and returns its entry time and, for a
// fenced lease, the section, or nil and false if the resource rejects it.
// The entry time is read under the lock, so accepted fences are in entry
// order.
func (r *Resource) enter(l lockimpl.Lease) (int64, *section, bool) {
	if l.Fence == 0 {
		return r.now(), nil, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	call := r.now()
	if l.Fence < r.highest[l.Key] {
		return call, nil, false
	}
	r.highest[l.Key] = l.Fence
	if prev := r.open[l.Key]; prev != nil && prev.fence < l.Fence && prev.cut == 0 {
		prev.cut = call
	}
	s := &section{fence: l.Fence}
	r.open[l.Key] = s
	return call, s, true
}

// exit records the write op, with its process, times and flags, for
// lease l: accepted from call to return (to the moment a higher token was
// let in, for a fenced section: its writes after that were rejected), or
// rejected at call.
func (r *Resource) exit(op history.Op, l lockimpl.Lease, s *section, accepted bool) {
	op.F, op.Type, op.Key, op.Token, op.Fence = history.Write, history.OK, l.Key, l.Token, l.Fence
	if !accepted {
		op.Type, op.Return, op.Error = history.Fail, op.Call, "stale fencing token"
	}
	if s != nil {
		r.mu.Lock()
		if s.cut > 0 && s.cut < op.Return {
			op.Return, op.CutShort = max(s.cut, op.Call), true
		}
		if r.open[l.Key] == s {
			delete(r.open, l.Key)
		}
		r.mu.Unlock()
	}
	r.record(op)
}
