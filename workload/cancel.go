package workload

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// The cancel fault (nemesis.ClientCancel), played in three places that
// meet here: the op's context, which opCtx makes cancellable for a
// targeted client (a cancelOp in it); the go-redis hook, which arms the
// op's command (its bytes, as go-redis writes them); and the connection
// the lock's client dialed (cancelConn, the hook's DialHook), which
// finds the armed command among what it writes, reads the reply Redis
// sent, cancels the op and holds the reply there for the hold before it
// gives it to a Read. Toxiproxy's toxics see neither which connection
// they act on nor both of its directions, so the reply is held at the
// client's end of the wire, where the client cannot tell it from one
// held by a proxy (the socket is empty meanwhile: go-redis's health
// check peeks at it, as at a real one).

// cancelOp is one op of a client the cancel fault targets: the cancel
// of its context, taken once, by the connection that holds its reply.
type cancelOp struct {
	cancel context.CancelFunc
	taken  atomic.Bool
}

type cancelKey struct{}

// cancelState is the clients' side of the cancel fault.
type cancelState struct {
	on   []atomic.Bool // targeted slots
	hold atomic.Int64  // ns a reply is held
	// arms are the commands of targeted ops being sent, by the bytes
	// go-redis writes for them; armed counts them (the connections'
	// hot path reads it, and takes mu only then).
	mu    sync.Mutex
	arms  map[string]*cancelOp
	armed atomic.Int32
	// held releases every reply held now (at the heal).
	held map[*holdRelease]struct{}
	// applied and behind are the figures since the last Tally.
	applied, behind atomic.Int64
}

func newCancelState(clients int) *cancelState {
	return &cancelState{on: make([]atomic.Bool, clients), arms: map[string]*cancelOp{}, held: map[*holdRelease]struct{}{}}
}

// cancelClients targets n clients chosen by rng, until HealClients:
// each of their acquires and releases is cancelled once its reply is
// held, for hold (kept under half the op timeout, so that a client that
// waits reads the reply within its deadline).
func (r *Runner) cancelClients(rng *rand.Rand, n int, hold time.Duration) []int {
	f := r.faults
	hold = min(hold, f.opTimeout/2)
	if hold <= 0 {
		hold = f.opTimeout / 4
	}
	f.cancels.hold.Store(int64(hold))
	var ids []int
	for _, s := range rng.Perm(f.slots)[:min(n, f.slots)] {
		f.cancels.on[s].Store(true)
		ids = append(ids, int(f.ids[s].Load()))
	}
	return ids
}

// healCancels stops targeting clients and releases every held reply.
func (c *cancelState) heal() {
	for i := range c.on {
		c.on[i].Store(false)
	}
	c.mu.Lock()
	held := c.held
	c.held = map[*holdRelease]struct{}{}
	c.mu.Unlock()
	for h := range held {
		h.fire()
	}
}

// Tally is nemesis.ClientTally: the figures of the cancel fault (or of
// the starve fault: starve.go; of drop-unlock: drop_unlock.go) since the
// last call.
func (r *Runner) Tally(kind string) map[string]int64 {
	switch kind {
	case nemesis.ClientStarve:
		return map[string]int64{history.RenewalStarved: r.faults.starves.starved.Swap(0)}
	case nemesis.ClientDropUnlock:
		return map[string]int64{history.UnlockDroppedWaiting: r.faults.drops.dropped.Swap(0)}
	case nemesis.ClientPool:
		return r.poolTally()
	case nemesis.ClientCancel:
	default:
		return nil
	}
	c := r.faults.cancels
	return map[string]int64{history.CancelledApplied: c.applied.Swap(0), history.SentBehindCancel: c.behind.Swap(0)}
}

// cancellable is ctx for one op of client c: while the cancel fault
// targets c, a context it can cancel, and the func that ends it.
func (r *Runner) cancellable(ctx context.Context, c *client) (context.Context, func()) {
	if !r.faults.cancels.on[r.faults.slot(c.id)].Load() {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	return context.WithValue(ctx, cancelKey{}, &cancelOp{cancel: cancel}), cancel
}

// cancelHook is the go-redis hook of the cancel fault: its DialHook
// wraps each connection in a cancelConn, and its ProcessHook arms the
// command of a targeted op that is not yet cancelled.
type cancelHook struct{ c *cancelState }

func (h cancelHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &cancelConn{Conn: conn, c: h.c, poke: make(chan struct{}), closed: make(chan struct{})}
		if s, ok := conn.(syscall.Conn); ok {
			return cancelSysConn{cc, s}, nil
		}
		return cc, nil
	}
}

func (h cancelHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		op, _ := ctx.Value(cancelKey{}).(*cancelOp)
		if op == nil || op.taken.Load() {
			return next(ctx, cmd)
		}
		key, ok := respOf(cmd.Args())
		if !ok {
			return next(ctx, cmd)
		}
		h.c.arm(key, op)
		defer h.c.disarm(key, op)
		return next(ctx, cmd)
	}
}

func (h cancelHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *cancelState) arm(key string, op *cancelOp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.arms[key]; !dup {
		c.arms[key] = op
		c.armed.Add(1)
	}
}

func (c *cancelState) disarm(key string, op *cancelOp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arms[key] == op {
		delete(c.arms, key)
		c.armed.Add(-1)
	}
}

// claim returns the armed op whose command p carries, if any, and takes
// it.
func (c *cancelState) claim(p []byte) *cancelOp {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, op := range c.arms {
		if bytes.Contains(p, []byte(key)) && op.taken.CompareAndSwap(false, true) {
			delete(c.arms, key)
			c.armed.Add(-1)
			return op
		}
	}
	return nil
}

// respOf is the command args as go-redis writes it (internal/proto's
// WriteArgs at v9.23.0), for the types a lock's commands carry; false
// for another (the op is then not cancelled).
func respOf(args []any) (string, bool) {
	b := append([]byte{'*'}, strconv.Itoa(len(args))...)
	b = append(b, '\r', '\n')
	for _, a := range args {
		var s []byte
		switch v := a.(type) {
		case string:
			s = []byte(v)
		case []byte:
			s = v
		case int:
			s = strconv.AppendInt(nil, int64(v), 10)
		case int64:
			s = strconv.AppendInt(nil, v, 10)
		case int32:
			s = strconv.AppendInt(nil, int64(v), 10)
		case uint64:
			s = strconv.AppendUint(nil, v, 10)
		case float64:
			s = strconv.AppendFloat(nil, v, 'f', -1, 64)
		case bool:
			s = []byte{'0'}
			if v {
				s[0] = '1'
			}
		case time.Duration:
			s = strconv.AppendInt(nil, v.Nanoseconds(), 10)
		default:
			return "", false
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, '\r', '\n')
		b = append(b, s...)
		b = append(b, '\r', '\n')
	}
	return string(b), true
}

// holdRelease ends one held reply's hold: at its time, or at the heal.
type holdRelease struct {
	once sync.Once
	ch   chan struct{}
}

func (h *holdRelease) fire() { h.once.Do(func() { close(h.ch) }) }

// release starts a hold of the configured length.
func (c *cancelState) release() *holdRelease {
	h := &holdRelease{ch: make(chan struct{})}
	c.mu.Lock()
	c.held[h] = struct{}{}
	c.mu.Unlock()
	time.AfterFunc(time.Duration(c.hold.Load()), func() {
		h.fire()
		c.mu.Lock()
		delete(c.held, h)
		c.mu.Unlock()
	})
	return h
}

// cancelConn is a connection of the lock's client under the cancel
// fault. When it writes an armed op's command, it reads the reply Redis
// sends (the command was applied), cancels the op's context, and holds
// the reply until its release: a Read meanwhile waits, and returns a
// timeout at its read deadline as a socket does, the reply kept for the
// next Read. The first command written after such a cancel is counted,
// whether the client read the reply first or not.
type cancelConn struct {
	net.Conn
	c *cancelState
	// behind: a cancelled reply was pending at a cancel, and no command
	// has been written since.
	behind atomic.Bool

	mu       sync.Mutex
	armed    *cancelOp
	held     []byte        // the held reply, or what is left of it
	released *holdRelease  // its hold
	deadline time.Time     // the read deadline
	poke     chan struct{} // closed when the deadline changes
	closed   chan struct{}
	close    sync.Once
}

func (c *cancelConn) Write(p []byte) (int, error) {
	if c.behind.CompareAndSwap(true, false) {
		c.c.behind.Add(1)
	}
	if c.c.armed.Load() > 0 {
		if op := c.c.claim(p); op != nil {
			c.mu.Lock()
			c.armed = op
			c.mu.Unlock()
		}
	}
	return c.Conn.Write(p)
}

func (c *cancelConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	op := c.armed
	c.armed = nil
	pending := c.held != nil
	c.mu.Unlock()
	if op != nil && !pending {
		buf := make([]byte, max(len(p), 512))
		n, err := c.Conn.Read(buf)
		if n == 0 {
			return 0, err
		}
		// The reply came: Redis applied the command. The caller is
		// cancelled while its reply is held.
		c.mu.Lock()
		c.held, c.released = buf[:n], c.c.release()
		c.mu.Unlock()
		op.cancel()
		c.c.applied.Add(1)
		c.behind.Store(true)
		pending = true
	}
	if !pending {
		return c.Conn.Read(p)
	}
	if err := c.waitRelease(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(p, c.held)
	if c.held = c.held[n:]; len(c.held) == 0 {
		c.held, c.released = nil, nil
	}
	return n, nil
}

// errHeldTimeout is a read deadline passed while a reply was held: what
// a socket returns then (net.Error, Timeout).
func (c *cancelConn) errHeldTimeout() error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

// waitRelease waits until the held reply is released, the read deadline
// passes or the connection is closed.
func (c *cancelConn) waitRelease() error {
	for {
		c.mu.Lock()
		rel, dl, poke := c.released, c.deadline, c.poke
		c.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return c.errHeldTimeout()
			}
			t = time.NewTimer(d)
			timeout = t.C
		}
		var err error
		again := false
		select {
		case <-rel.ch:
		case <-poke:
			again = true
		case <-timeout:
			err = c.errHeldTimeout()
		case <-c.closed:
			err = net.ErrClosed
		}
		if t != nil {
			t.Stop()
		}
		if !again {
			return err
		}
	}
}

func (c *cancelConn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	close(c.poke)
	c.poke = make(chan struct{})
	c.mu.Unlock()
}

func (c *cancelConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *cancelConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *cancelConn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// cancelSysConn is a cancelConn over a socket: go-redis's health check
// of a pooled connection peeks at the socket as it would without the
// fault (a wrapper without SyscallConn skips it; one whose SyscallConn
// fails fails it).
type cancelSysConn struct {
	*cancelConn
	s syscall.Conn
}

func (c cancelSysConn) SyscallConn() (syscall.RawConn, error) { return c.s.SyscallConn() }
