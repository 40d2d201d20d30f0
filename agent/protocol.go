// Package agent is the wire between a coordinator (lockcheck run
// --agents N) and its agents (lockcheck agent --join): clients on many
// machines, judged as one history. It holds the messages, the framing,
// the handshake's checks and the clock conversion; harness drives both
// ends.
//
// One TCP connection per agent (TLS optional) carries JSON lines both
// ways. The agent says hello (version and token); the coordinator
// welcomes it with its index and the plan, or refuses it with one line.
// The coordinator measures the agent's clock with round trips (ping and
// pong) before the start, every PingEvery during the run and after the
// end; the agent streams its ops in batches as they complete, each op
// announced first when it starts (begin), so that the ops in flight of an
// agent that is lost are known and written as indeterminate.
package agent

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockcheck/lockcheck/nemesis"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Message types.
const (
	THello   = "hello"   // agent: version, token, index (a rejoin's, else -1)
	TWelcome = "welcome" // coordinator: index, plan
	TRefuse  = "refuse"  // coordinator: why, then it closes
	TPing    = "ping"    // coordinator: sent
	TPong    = "pong"    // agent: sent (echoed), agent
	TReady   = "ready"   // agent: its lock is built and Redis answers
	TFail    = "fail"    // agent: it cannot play (error), then it closes
	TStart   = "start"   // coordinator: the clients start
	TOps     = "ops"     // agent: a batch of ops and begins, in order
	TEnter   = "enter"   // agent: key, fence; coordinator replies with at, ok, section
	TLeave   = "leave"   // agent: key, section, call, exit (agent clock); reply: at (0: not cut)
	TFault   = "fault"   // coordinator: a client fault to play; reply: ids
	TReply   = "reply"   // a reply to the request with the same id
	TStop    = "stop"    // coordinator: stop the clients
	TDie     = "die"     // coordinator: die at once, as a crashed host (kill-agent)
	TDone    = "done"    // agent: every op sent; unrecorded counts
)

// Msg is one line of the protocol; T says which fields it uses.
type Msg struct {
	T  string `json:"t"`
	ID int64  `json:"id,omitempty"`

	Version string          `json:"version,omitempty"`
	Token   string          `json:"token,omitempty"`
	Index   int             `json:"index,omitempty"`
	Error   string          `json:"error,omitempty"`
	Plan    json.RawMessage `json:"plan,omitempty"`

	Sent  int64 `json:"sent,omitempty"`
	Agent int64 `json:"agent,omitempty"`

	Ops []Op `json:"ops,omitempty"`

	Key     string `json:"key,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	Section int64  `json:"section,omitempty"`
	Call    int64  `json:"call,omitempty"`
	Exit    int64  `json:"exit,omitempty"`
	At      int64  `json:"at,omitempty"`
	OK      bool   `json:"ok,omitempty"`

	Fault *Fault `json:"fault,omitempty"`
	IDs   []int  `json:"ids,omitempty"`

	Counts json.RawMessage `json:"counts,omitempty"`
}

// Op is an op on the wire: a history op on the agent's clock, with
// process ids already the run's. Begin marks the announcement of an op
// that started (its call, key and, for a release or extend, token); the
// op itself follows when it completes. CallRef and ReturnRef mark times
// already on the coordinator's clock (a fenced write's entry and cut,
// which the coordinator's resource decided).
type Op struct {
	history.Op
	Begin     bool `json:"begin,omitempty"`
	CallRef   bool `json:"call_ref,omitempty"`
	ReturnRef bool `json:"return_ref,omitempty"`
}

// Fault is what the coordinator asks an agent to play on its clients:
// a client fault (Kind FaultClient: Client, forwarded as the nemesis made
// it, played with Seed), a heal of them all (FaultHeal), a toxic on a
// client proxy (FaultToxic), or the count of what a client fault did to
// its clients since it was last asked (FaultTally: Tally names the
// fault; the reply's Counts, a map of figure to count). An agent refuses
// any other kind, and a client fault its clients do not play, with an
// error.
type Fault struct {
	Kind   string               `json:"kind"`
	Seed   uint64               `json:"seed,omitempty"`
	Client *nemesis.ClientFault `json:"client,omitempty"`
	// Node and Toxic: a toxic added to (or removed from) the proxy in
	// front of node Node (its address), which the agent mirrors on its
	// own proxy for that node (latency, lost-reply).
	Node  string          `json:"node,omitempty"`
	Toxic json.RawMessage `json:"toxic,omitempty"`
	Tally string          `json:"tally,omitempty"`
}

// The kinds of Fault.
const (
	FaultClient = "client"
	FaultHeal   = "heal"
	FaultToxic  = "toxic"
	FaultTally  = "tally"
)

// Conn is one end of an agent connection: JSON lines, one writer at a
// time, requests matched to their replies by id.
type Conn struct {
	c   net.Conn
	dec *json.Decoder

	wmu sync.Mutex
	bw  *bufio.Writer

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan Msg
	closed  error

	// heard is when a message last came (Unix ns; the connection's
	// start before the first): Silent.
	heard atomic.Int64
}

// NewConn wraps c.
func NewConn(c net.Conn) *Conn {
	bw := bufio.NewWriterSize(c, 64<<10)
	conn := &Conn{c: c, dec: json.NewDecoder(bufio.NewReaderSize(c, 64<<10)), bw: bw, waiting: map[int64]chan Msg{}}
	conn.heard.Store(time.Now().UnixNano())
	return conn
}

// Send writes m as one line and flushes it. m is encoded before the
// write lock is taken: every client of an agent announces its ops here,
// and only the write itself is one at a time.
func (c *Conn) Send(m Msg) error {
	b, err := json.Marshal(&m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// A peer that stops reading must not hold a writer (and every
	// caller behind it) forever: a write stuck for Silence fails, and the
	// connection is as lost as a silent one.
	_ = c.c.SetWriteDeadline(time.Now().Add(Silence))
	_, err = c.bw.Write(append(b, '\n'))
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.c.Close() // a line cut short: nothing more can follow it
	}
	return err
}

// Recv reads the next message. Only one goroutine reads.
func (c *Conn) Recv() (Msg, error) {
	var m Msg
	err := c.dec.Decode(&m)
	if err == nil {
		c.heard.Store(time.Now().UnixNano())
	}
	return m, err
}

// Silent is how long nothing came from the other side.
func (c *Conn) Silent() time.Duration { return time.Duration(time.Now().UnixNano() - c.heard.Load()) }

// SetDeadline bounds the reads and writes of the handshake.
func (c *Conn) SetDeadline(t time.Time) error { return c.c.SetDeadline(t) }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.c.RemoteAddr().String() }

// Close closes the connection; requests still waiting fail.
func (c *Conn) Close() error {
	c.fail(net.ErrClosed)
	return c.c.Close()
}

// ErrLost is the error of a request whose connection went away.
var ErrLost = errors.New("agent connection lost")

// Call sends request m and waits for its reply (which the reading
// goroutine hands over with Deliver), at most timeout.
func (c *Conn) Call(m Msg, timeout time.Duration) (Msg, error) {
	ch := make(chan Msg, 1)
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return Msg{}, fmt.Errorf("%w: %w", ErrLost, c.closed)
	}
	c.nextID++
	m.ID = c.nextID
	c.waiting[m.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, m.ID)
		c.mu.Unlock()
	}()
	if err := c.Send(m); err != nil {
		return Msg{}, fmt.Errorf("%w: %w", ErrLost, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return Msg{}, ErrLost
		}
		return r, nil
	case <-t.C:
		return Msg{}, fmt.Errorf("%s: no reply in %v", m.T, timeout)
	}
}

// Deliver hands a reply to the Call waiting for it; it reports whether
// one was.
func (c *Conn) Deliver(m Msg) bool {
	c.mu.Lock()
	ch := c.waiting[m.ID]
	delete(c.waiting, m.ID)
	c.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m
	return true
}

// fail ends every waiting Call: the reader saw the connection end.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		c.closed = err
	}
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
}

// Failed is called by the reading goroutine when Recv fails.
func (c *Conn) Failed(err error) { c.fail(err) }

// TokenMatches compares a token in constant time (of hashes, so that
// not even the length leaks).
func TokenMatches(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// PingEvery is how often the coordinator measures each agent's clock
// during a run.
const PingEvery = 250 * time.Millisecond

// Silence is how long one side of a run may hear nothing from the other
// (pings one way, pongs and ops the other, every PingEvery) before it
// takes the connection as lost: a half-open connection (a host gone
// without a FIN, a cut network) ends the agent's clients within it, so
// that no agent locks unrecorded, and the coordinator writes the agent's
// ops in flight as indeterminate.
const Silence = 10 * time.Second
