package workload

import (
	"sync"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// Resource is the protected resource: the thing a lock exists to guard.
// Enter admits a critical section (at call, on the history's clock) or
// rejects it; Exit records the section's write op. The workload's own is
// in process (newResource); clients on many machines share one that their
// coordinator serves (Runner.UseResource), so that a fence is judged
// across machines exactly as on one.
type Resource interface {
	Enter(l lockimpl.Lease) (call int64, s *Admission, accepted bool)
	Exit(op history.Op, l lockimpl.Lease, s *Admission, accepted bool)
}

// localResource is the Resource of one process. It records each critical
// section as one write op whose call is the entry and whose return is the
// exit. For leases without a fencing token it accepts every write, so a
// double holder shows as two accepted writes on one key that overlap. For
// fenced leases it is the fenced resource (Fences).
type localResource struct {
	record func(history.Op)
	now    func() int64
	fences *Fences
}

func newResource(record func(history.Op), now func() int64) *localResource {
	return &localResource{record: record, now: now, fences: NewFences(now)}
}

// Enter starts a critical section and returns its entry time and, for a
// fenced lease, the section, or nil and false if the resource rejects it.
func (r *localResource) Enter(l lockimpl.Lease) (int64, *Admission, bool) {
	if l.Fence == 0 {
		return r.now(), nil, true
	}
	return r.fences.Enter(l.Key, l.Fence)
}

// Exit records the write op, with its process, times and flags, for
// lease l: accepted from call to return (to the moment a higher token was
// let in, for a fenced section: its writes after that were rejected), or
// rejected at call.
func (r *localResource) Exit(op history.Op, l lockimpl.Lease, s *Admission, accepted bool) {
	op = WriteOp(op, l, accepted)
	if s != nil && accepted {
		var cut bool
		if op.Return, cut = r.fences.Leave(l.Key, s, op.Call, op.Return); cut {
			op.CutShort = true
		}
	}
	r.record(op)
}

// WriteOp fills in a critical section's write op for lease l: ok, or
// failed at its call if the resource rejected it.
func WriteOp(op history.Op, l lockimpl.Lease, accepted bool) history.Op {
	op.F, op.Type, op.Key, op.Token, op.Fence = history.Write, history.OK, l.Key, l.Token, l.Fence
	if !accepted {
		op.Type, op.Return, op.Error = history.Fail, op.Call, "stale fencing token"
	}
	return op
}

// Fences is the fenced resource's admission: it rejects a write whose
// token is lower than the highest it accepted on the key, at a section's
// entry and, since a section is many writes, for the rest of a section
// that a higher token overtook (its write ends there, cut short).
type Fences struct {
	now func() int64

	mu      sync.Mutex
	highest map[string]int64
	open    map[string]*Admission // the fenced section last let in, by key
	nextID  int64
}

// NewFences returns an empty fenced resource on the clock now.
func NewFences(now func() int64) *Fences {
	return &Fences{now: now, highest: map[string]int64{}, open: map[string]*Admission{}}
}

// Admission is one fenced critical section the resource let in. A section
// stands for many writes, each checked against the highest token: once a
// higher token is let in (cut), the section's later writes are rejected,
// so what it wrote ends there.
type Admission struct {
	// ID names the section to a client on another machine.
	ID    int64
	fence int64
	cut   int64 // when a higher token was let in; 0: not yet
}

// Enter lets in a section of fence on key, at call, or rejects it. The
// entry time is read under the lock, so accepted fences are in entry
// order, and a section overtaken is cut at the instant its successor
// entered.
func (f *Fences) Enter(key string, fence int64) (int64, *Admission, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := f.now()
	if fence < f.highest[key] {
		return call, nil, false
	}
	f.highest[key] = fence
	if prev := f.open[key]; prev != nil && prev.fence < fence && prev.cut == 0 {
		prev.cut = call
	}
	f.nextID++
	s := &Admission{ID: f.nextID, fence: fence}
	f.open[key] = s
	return call, s, true
}

// Leave ends section s of key, entered at call and left at ret: it
// returns when its accepted writes ended (the instant a higher token was
// let in, if that came first) and whether it was cut short so.
func (f *Fences) Leave(key string, s *Admission, call, ret int64) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[key] == s {
		delete(f.open, key)
	}
	if s.cut > 0 && s.cut < ret {
		return max(s.cut, call), true
	}
	return ret, false
}
