package agent

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// remoteResource is the protected resource of an agent's clients: the
// coordinator's, for fenced leases, so that a stale token is rejected
// whichever machine wrote the higher one. Unfenced writes need no
// admission: their overlaps are judged from the history.
type remoteResource struct {
	conn    *Conn
	now     func() int64
	send    func(Op)
	timeout time.Duration
}

// Enter asks the coordinator to let a fenced section in. Its entry time
// is the coordinator's (a section marked so carries it); a section the
// coordinator could not be asked about is rejected on the agent's clock.
func (r *remoteResource) Enter(l lockimpl.Lease) (int64, *workload.Admission, bool) {
	if l.Fence == 0 {
		return r.now(), nil, true
	}
	m, err := r.conn.Call(Msg{T: TEnter, Key: l.Key, Fence: l.Fence}, r.timeout)
	if err != nil {
		return r.now(), nil, false
	}
	return m.At, &workload.Admission{ID: m.Section}, m.OK
}

// Exit sends the write op; a fenced section's entry (and its cut, if a
// higher token overtook it) are on the coordinator's clock.
func (r *remoteResource) Exit(op history.Op, l lockimpl.Lease, s *workload.Admission, accepted bool) {
	op = workload.WriteOp(op, l, accepted)
	w := Op{Op: op, CallRef: s != nil, ReturnRef: s != nil && !accepted}
	if s != nil && accepted {
		m, err := r.conn.Call(Msg{T: TLeave, Key: l.Key, Section: s.ID, Call: op.Call, Exit: op.Return}, r.timeout)
		if err == nil && m.OK {
			w.Return, w.ReturnRef, w.CutShort = m.At, true, true
		}
	}
	r.send(w)
}
