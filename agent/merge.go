package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// read serves one agent's messages until its connection ends.
func (c *Coordinator) read(ra *remoteAgent) {
	for {
		m, err := ra.conn.Recv()
		recv := c.cfg.Clock.Now()
		if err != nil {
			if d := ra.silent.Load(); d > 0 {
				err = fmt.Errorf("nothing heard from it for %v: %w", time.Duration(d).Round(time.Millisecond), err)
			}
			ra.conn.Failed(err)
			c.lose(ra, err)
			return
		}
		switch m.T {
		case TPong:
			ra.clock.Add(Sample{Sent: m.Sent, Agent: m.Agent, Recv: recv})
		case TOps:
			c.ops(ra, m.Ops)
		case TEnter:
			at, s, ok := c.fences.Enter(m.Key, m.Fence)
			var id int64
			if s != nil {
				id = s.ID
				c.mu.Lock()
				c.sections[id] = s
				c.mu.Unlock()
			}
			_ = ra.conn.Send(Msg{T: TReply, ID: m.ID, At: at, OK: ok, Section: id})
		case TLeave:
			c.mu.Lock()
			s := c.sections[m.Section]
			delete(c.sections, m.Section)
			c.mu.Unlock()
			reply := Msg{T: TReply, ID: m.ID}
			if s != nil {
				exit, _ := ra.clock.To(m.Exit)
				reply.At, reply.OK = c.fences.Leave(m.Key, s, m.Call, exit)
			}
			_ = ra.conn.Send(reply)
		case TReply:
			ra.conn.Deliver(m)
		case TReady:
			ra.readyOnce.Do(func() { close(ra.ready) })
			if ra.gen > 0 {
				go c.startLate(ra)
			}
		case TFail:
			ra.failed = m.Error
			ra.readyOnce.Do(func() { close(ra.ready) })
		case TDone:
			_ = json.Unmarshal(m.Counts, &ra.counts)
			ra.runErr = m.Error
			ra.doneOnce.Do(func() { close(ra.done) })
		}
	}
}

// ops records a batch: each begin is kept until its op completes; each
// op goes to the history on the coordinator's clock.
func (c *Coordinator) ops(ra *remoteAgent, ops []Op) {
	for _, w := range ops {
		if w.Begin {
			ra.pmu.Lock()
			ra.pending[w.Process] = append(ra.pending[w.Process], w.Op)
			ra.pmu.Unlock()
			continue
		}
		ra.completed(&w.Op)
		ra.received.Add(1)
		c.cfg.Record(ra.convert(w))
	}
}

// completed drops the begin that op completes: the oldest of its
// process with its f and key (and token, for a release or extend).
func (ra *remoteAgent) completed(op *history.Op) {
	ra.pmu.Lock()
	defer ra.pmu.Unlock()
	p := ra.pending[op.Process]
	for i, b := range p {
		if b.F == op.F && b.Key == op.Key && (b.F == history.Acquire || b.Token == op.Token) {
			p = slices.Delete(p, i, i+1)
			break
		}
	}
	if len(p) == 0 {
		delete(ra.pending, op.Process)
	} else {
		ra.pending[op.Process] = p
	}
}

// convert puts an agent's op on the coordinator's clock, with the bound
// of the conversion as its clock_bound. Times the coordinator decided
// (a fenced write's entry and cut) are exact already.
func (ra *remoteAgent) convert(w Op) history.Op {
	op := w.Op
	var b int64
	if !w.CallRef {
		op.Call, b = ra.clock.To(op.Call)
	}
	if !w.ReturnRef {
		var rb int64
		op.Return, rb = ra.clock.To(op.Return)
		b = max(b, rb)
	}
	if op.Scheduled > 0 {
		op.Scheduled, _ = ra.clock.To(op.Scheduled)
	}
	op.Call = max(op.Call, 0)
	op.Return = max(op.Return, op.Call)
	op.Scheduled = min(max(op.Scheduled, 0), op.Call)
	op.ClockBound = b
	if b > ra.maxBound.Load() {
		ra.maxBound.Store(b)
	}
	return op
}

// lose marks an agent lost (its connection ended before it said done):
// its ops in flight are written as indeterminate, and the run goes on.
func (c *Coordinator) lose(ra *remoteAgent, err error) {
	at := c.cfg.Clock.Now()
	select {
	case <-ra.done:
		return // it said done: the end of its connection is the run's
	default:
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	ra.pmu.Lock()
	var inflight []history.Op
	for _, ops := range ra.pending {
		inflight = append(inflight, ops...)
	}
	ra.pending = map[int][]history.Op{}
	ra.pmu.Unlock()
	slices.SortFunc(inflight, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	for _, b := range inflight {
		op := ra.convert(Op{Op: b})
		op.Type, op.Return, op.Error = history.Info, max(at, op.Call), "agent lost"
		if op.F == history.Acquire {
			// It may have taken effect, under a token no one knows.
			op.Token = "unknown-" + lockimpl.NewToken()
		}
		c.cfg.Record(op)
	}
	if closed {
		ra.lost = fmt.Sprintf("agent %d lost at %s (%v)", ra.index, history.Seconds(at), err)
	} else {
		ra.lost = fmt.Sprintf("agent %d lost at %s: %d ops in flight written as info (%v)", ra.index, history.Seconds(at), len(inflight), err)
	}
	c.logf("coordinator: %s", ra.lost)
	ra.doneOnce.Do(func() { close(ra.done) })
}
