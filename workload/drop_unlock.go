package workload

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// The drop-unlock fault (nemesis.ClientDropUnlock), played on the
// connections the lock's client dials (dropHook, a DialHook): while it
// is on, a connection that has subscribed and reads a pub/sub message
// is cut (closed, its Read failing as a reset does) before the client
// sees the message. go-redis's PubSub takes the failed read as a bad
// connection, dials again and resubscribes (pubsub.go releaseConn and
// reconnect at v9.23.0): the message is lost, the subscription kept.
// A connection's owner is the client whose context dialed it (a
// subscription's first connection: a waiter's Subscribe); a redial by
// go-redis's own goroutine has none, and a message dropped there is
// not counted.

// dropState is the clients' side of the drop-unlock fault.
type dropState struct {
	on atomic.Bool
	// waiting are the slots in a blocking acquire now.
	waiting []atomic.Bool
	// dropped is the figure since the last Tally.
	dropped atomic.Int64
}

func newDropState(clients int) *dropState {
	return &dropState{waiting: make([]atomic.Bool, clients)}
}

// dropUnlocks turns the fault on until HealClients: it acts on every
// subscriber connection, so on every client (ids returned).
func (r *Runner) dropUnlocks() []int {
	r.faults.drops.on.Store(true)
	ids := make([]int, r.faults.slots)
	for s := range ids {
		ids[s] = int(r.faults.ids[s].Load())
	}
	return ids
}

// waitingIn marks client c in a blocking acquire until the func
// returned is called.
func (r *Runner) waitingIn(c *client) func() {
	if r.waiter == nil {
		return func() {}
	}
	w := &r.faults.drops.waiting[r.faults.slot(c.id)]
	w.Store(true)
	return func() { w.Store(false) }
}

// dropHook is the go-redis hook of the drop-unlock fault.
type dropHook struct{ f *faults }

func (h dropHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		slot := -1
		if id := lockimpl.ClientFrom(ctx); id >= 0 {
			slot = h.f.slot(id)
		}
		dc := &dropConn{Conn: conn, f: h.f, slot: slot}
		if s, ok := conn.(syscall.Conn); ok {
			return dropSysConn{dc, s}, nil
		}
		return dc, nil
	}
}

func (h dropHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h dropHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// dropConn is a connection of the lock's client under the drop-unlock
// fault: subscribed once it has written a SUBSCRIBE (or PSUBSCRIBE,
// SSUBSCRIBE), as go-redis writes it.
type dropConn struct {
	net.Conn
	f          *faults
	slot       int
	subscribed atomic.Bool
}

// subscribeArg and the message kinds are as RESP carries them: a bulk
// string of their length. go-redis writes a subscription's command alone
// and its name in lower case, first after the array's header (pubsub.go
// _subscribe and writeCmd at v9.23.0), so a write is looked at only in
// its first subscribeHead bytes: every write of every connection of a
// run with a client fault meets this test, and a lock's commands carry
// keys and scripts far longer.
const subscribeHead = 32

var (
	subscribeArg = []byte("subscribe\r\n")
	pushKinds    = [][]byte{[]byte("$7\r\nmessage\r\n"), []byte("$8\r\npmessage\r\n"), []byte("$8\r\nsmessage\r\n")}
)

func (c *dropConn) Write(p []byte) (int, error) {
	if !c.subscribed.Load() && bytes.Contains(p[:min(len(p), subscribeHead)], subscribeArg) {
		c.subscribed.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n == 0 || !c.subscribed.Load() || !c.f.drops.on.Load() || !hasPush(p[:n]) {
		return n, err
	}
	// A message came while the fault is on: cut the connection before
	// the client reads it.
	_ = c.Conn.Close()
	if c.slot >= 0 && c.f.drops.waiting[c.slot].Load() {
		c.f.drops.dropped.Add(1)
	}
	return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: syscall.ECONNRESET}
}

func hasPush(b []byte) bool {
	for _, k := range pushKinds {
		if bytes.Contains(b, k) {
			return true
		}
	}
	return false
}

// dropSysConn is a dropConn over a socket, for go-redis's health check
// (as cancelSysConn).
type dropSysConn struct {
	*dropConn
	s syscall.Conn
}

func (c dropSysConn) SyscallConn() (syscall.RawConn, error) { return c.s.SyscallConn() }
