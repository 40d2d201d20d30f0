package process

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// A lock process's late reply is information: a request given up on at
// the op timeout (or because its caller stopped waiting) whose reply
// comes afterwards says how it ended. Its op waits for that reply
// (lockimpl.Record), and is written with what the reply says: the token the
// process chose, ok, fail or its error, and the reply's arrival as its
// return. An acquire that ended ok after its client had given up is a
// lease no one will use: lockcheck releases it, as a client that learns
// of it would, and records that release.

// LateError is the error of a request given up on whose reply may still
// come.
type LateError struct {
	p   *Lock
	id  int64
	err error
}

func (e *LateError) Error() string { return e.err.Error() }
func (e *LateError) Unwrap() error { return e.err }

// late is a request given up on: who asked, and either the op waiting
// for its reply or a reply that came before the op was handed over.
type late struct {
	waiter
	op     *history.Op
	record func(history.Op)
	reply  *Reply
	at     int64 // the reply's arrival
}

// Defer hands over the op that records the call, to be recorded when
// the reply comes (lockimpl.Deferred).
func (e *LateError) Defer(op history.Op, record func(history.Op)) bool {
	return e.p.await(e.id, op, record)
}

// await hands over the op of request id, given up on: it is recorded
// when the reply comes (at once if it came already), or as it is when
// the lock closes. It reports false if the lock has closed (the caller
// records op).
func (p *Lock) await(id int64, op history.Op, record func(history.Op)) bool {
	p.mu.Lock()
	l := p.late[id]
	if l == nil {
		p.mu.Unlock()
		return false
	}
	if l.reply == nil {
		l.op, l.record = &op, record
		p.mu.Unlock()
		return true
	}
	delete(p.late, id)
	p.mu.Unlock()
	l.op, l.record = &op, record
	p.resolve(l)
	return true
}

// lateReply takes the reply to a request given up on, at its arrival.
// It reports false if no request was given up on with that id.
func (p *Lock) lateReply(r Reply, at int64) bool {
	p.mu.Lock()
	l := p.late[r.ID]
	if l == nil {
		p.mu.Unlock()
		return false
	}
	l.reply, l.at = &r, at
	if l.acquire && r.OK && r.Token != "" {
		// Its process's own extends of this lease are the client's.
		p.emu.Lock()
		p.holders[r.Token] = holder{client: l.client, key: l.key}
		p.emu.Unlock()
	}
	if l.op == nil {
		p.mu.Unlock() // its op comes (await), or the lock closes
		return true
	}
	delete(p.late, r.ID)
	p.mu.Unlock()
	p.resolve(l)
	return true
}

// resolve records l's op with what its reply says.
func (p *Lock) resolve(l *late) {
	op, r := l.op, l.reply
	op.Return = max(op.Return, l.at)
	switch {
	case r.Undone && op.F == history.Acquire:
		// An attempt undone did not happen: not recorded, as in time.
		return
	case r.Error != "":
		// Answered: it took effect by the reply's arrival, its return.
		op.Type, op.Error, op.Answered = history.Info, r.Error+" (a reply after lockcheck gave up)", r.Answered
	case !r.OK:
		op.Type, op.Error = history.Fail, "refused (a reply after lockcheck gave up)"
		if op.F == history.Acquire {
			op.Token = ""
		}
	case op.F == history.Acquire && r.Token == "":
		// A bad reply: the op stays as it was, indeterminate.
	default:
		op.Type, op.Error = history.OK, ""
		if op.F == history.Acquire {
			op.Token, op.Fence = r.Token, r.Fence
		}
	}
	l.record(*op)
	if op.F == history.Acquire && op.Type == history.OK {
		p.giveBack(*op, l.record)
	}
}

// giveBack releases a lease acquired after its client had given up on it
// (a late ok reply), and records the release under that client.
func (p *Lock) giveBack(acq history.Op, record func(history.Op)) {
	// Under mu, as Close sets closing: no Add after Close's Wait began.
	p.mu.Lock()
	if p.closing.Load() {
		p.mu.Unlock()
		return // the run is over: the lease expires
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		ctx := lockimpl.WithClient(context.Background(), acq.Process)
		call := p.now()
		err := p.Release(ctx, lockimpl.Lease{Key: acq.Key, Token: acq.Token, Fence: acq.Fence})
		if errors.Is(err, lockimpl.ErrBadLock) {
			return // the process broke: the run stops with that
		}
		lockimpl.Record(record, history.Op{Process: acq.Process, F: history.Release, Key: acq.Key, Token: acq.Token,
			Fence: acq.Fence, Call: call, Return: p.now()}, err)
	}()
}

// closeLate records, as they are, the ops given up on whose reply never
// came (called once the process is gone).
func (p *Lock) closeLate() {
	p.mu.Lock()
	pend := p.late
	p.late = map[int64]*late{}
	p.mu.Unlock()
	for _, l := range pend {
		if l.op != nil { // else never handed over: its caller recorded it
			l.record(*l.op)
		}
	}
}

// gaveUp is the error of request req, given up on (why).
func (p *Lock) gaveUp(req Request, why error) error {
	return &LateError{p: p, id: req.ID, err: fmt.Errorf("%s %s: %w", req.Op, req.Key, why)}
}

// errNoReply is why a request was given up on at the op timeout.
func errNoReply(timeout time.Duration) error {
	return fmt.Errorf("no reply within the op timeout %v", timeout)
}
