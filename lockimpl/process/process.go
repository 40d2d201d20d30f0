package process

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// Request is one line lockcheck writes to a lock process's stdin.
type Request struct {
	ID     int64  `json:"id"`
	Op     string `json:"op"` // acquire, release or extend
	Key    string `json:"key"`
	TTLms  int64  `json:"ttl_ms,omitempty"`
	Token  string `json:"token,omitempty"`
	Client int    `json:"client"`
	// Permits, on a semaphore's acquire, is the k permits its key has
	// (--permits); Access, on a read-write lock's, the mode, "read" or
	// "write". Each goes only to a process whose first ping's reply
	// declared that shape (Reply.Shape).
	Permits int    `json:"permits,omitempty"`
	Access  string `json:"access,omitempty"`
	// WaitMs, on an acquire of a run with --wait, is how long the lock
	// may wait for the key (blocking, as its library does) before it
	// answers refused; it goes only to a process whose first ping's
	// reply declared a wake-up bound (Reply.WakeBoundMs).
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// The shapes a lock process declares (Reply.Shape), lockimpl's.
const (
	ShapeMutex     = lockimpl.ShapeMutex
	ShapeSemaphore = lockimpl.ShapeSemaphore
	ShapeRWLock    = lockimpl.ShapeRWLock
)

// Reply is one line a lock process writes to its stdout. OK true is
// success; OK false without Error a definite failure; Error set means the
// outcome is unknown.
type Reply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Token string `json:"token,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	Error string `json:"error,omitempty"`
	// Scope, on the reply to the first ping, says the process's leases
	// are scopes (lockimpl.Scoped), and why: a library that hands out a
	// context or runs a callback, keeps the lease alive itself and gives
	// no deadline. Each lease it grants is then held until the holder is
	// done or the process writes {"event":"lost","key":K,"token":T}.
	Scope string `json:"scope,omitempty"`
	// TTLRoundMs, on the reply to the first ping, says the lock sets in
	// Redis each TTL rounded up to a multiple of this many ms (a library
	// that takes whole seconds: 1000): the history records what Redis
	// was told (lockimpl.KeyTTLer).
	TTLRoundMs int64 `json:"ttl_round_ms,omitempty"`
	// TTLAddMs is what the lock adds to each TTL, after rounding
	// (go-zero: 500).
	TTLAddMs int64 `json:"ttl_add_ms,omitempty"`
	// OpTimeoutMs, on the reply to the first ping, says the lock's Redis
	// client gives up on a command after this many ms of its own, not
	// after lockcheck's op timeout (lockimpl.OwnTimeouter): verify then
	// stalls Redis for longer than that.
	OpTimeoutMs int64 `json:"op_timeout_ms,omitempty"`
	// AcquireWaitsTTL, on the reply to the first ping, says an acquire
	// of a taken key waits for it (spins, blocks) up to its TTL, rounded
	// as TTLRoundMs says, before it answers refused (malkusch/lock's
	// lock() spins for its timeout, which is its TTL): lockcheck waits
	// that long more than its op timeout for an acquire's reply, which
	// would otherwise end indeterminate whenever the key was taken.
	AcquireWaitsTTL bool `json:"acquire_waits_ttl,omitempty"`
	// Shape, on the reply to the first ping, is the lock's shape:
	// ShapeMutex (or absent), ShapeSemaphore (each acquire carries the
	// key's permits, lockimpl.Permitter) or ShapeRWLock (each acquire
	// carries its access mode, lockimpl.ReadWriter). MaxPermits is the
	// most permits a semaphore takes (0: any); WriterPreference says a
	// read-write lock refuses a read acquire while a write acquire of
	// its key is in flight, not only while a writer holds it.
	Shape            string `json:"shape,omitempty"`
	MaxPermits       int    `json:"max_permits,omitempty"`
	WriterPreference bool   `json:"writer_preference,omitempty"`
	// WakeBoundMs, on the reply to the first ping, says the lock's
	// acquires can wait (an acquire's wait_ms, --wait), and the longest
	// it lets a waiter sleep while the key is free (its poll interval,
	// or its pub/sub wake-up's fallback), lockimpl.Waiter's WakeBound.
	WakeBoundMs int64 `json:"wake_bound_ms,omitempty"`
	// TriedMs, on an ok reply to an acquire that waited, is when the
	// lock sent the try that took the key, in ms after the request was
	// read (lockimpl.Lease.Acquired); absent, the waiter's window is
	// not judged (a refused one is).
	TriedMs *int64 `json:"tried_ms,omitempty"`
	// NotSent, with Error, says the request never reached Redis (a
	// client's circuit breaker refused it, no connection could be had):
	// it did not happen, and is counted, not recorded (lockimpl.ErrNotSent).
	NotSent bool `json:"not_sent,omitempty"`
	// Undone, on an acquire's reply, says the attempt reached no majority
	// either way and gave back what it had set (a Redlock split vote):
	// no holder is implied, and it is counted, not recorded
	// (lockimpl.ErrUndone).
	Undone bool `json:"undone,omitempty"`
	// Answered, with Error, says the library's call returned but did not
	// say how it ended (Symfony's release ignores its script's answer):
	// indeterminate, but whatever it did, it did by now; recorded with
	// no info horizon (lockimpl.ErrNoOutcome, history.Op.Answered).
	Answered bool `json:"answered,omitempty"`
}

// Lock is a lock implemented by a program in any language
// (--lock-cmd), spoken to in JSON lines: requests on its stdin, replies on
// its stdout in any order, many in flight. A request without a reply by
// the op timeout is indeterminate. A process that exits or writes a line
// that is not a reply stops the run (lockimpl.ErrBadLock) with its stderr tail.
type Lock struct {
	cmdline string
	cmd     *exec.Cmd
	timeout time.Duration
	now     func() int64

	wmu sync.Mutex
	w   *bufio.Writer
	in  *os.File
	out io.Reader

	mu      sync.Mutex
	pending map[int64]waiter
	// late are the requests given up on whose reply may still come.
	late map[int64]*late
	wg   sync.WaitGroup // giveBack's releases
	// closing: Close has closed the process's stdin; its end is expected.
	closing atomic.Bool
	dead    error // set once the process is gone or broke the protocol
	breach  error // a breach found by a writer, for the reader to report
	nextID  atomic.Int64

	stderr tail
	done   chan struct{} // closed when the reader has seen the process end
	close  sync.Once

	// What the process reports on its own (Event): record writes
	// its extends into the history, under the process of the client
	// whose lease they extend (holders, by token). holders are the
	// leases it granted and no release was asked of: its exit may end
	// them (Close).
	record  func(history.Op)
	emu     sync.Mutex
	holders map[string]holder
	// scope is why the process's leases are scopes ("": leases), from
	// its first ping; scopes are its live ones, by token.
	scope  string
	scopes map[string]*lockimpl.Watch
	// round and add are the TTL's rounding (0: none) and what is added
	// to it, from its first ping.
	round, add time.Duration
	// own is the command timeout the process declared (0: none);
	// waits: its acquires wait up to their TTL (AcquireWaitsTTL).
	own   time.Duration
	waits bool
	// shape is the lock's shape (Shape*), from its first ping, k the
	// run's permits (Env.Permits), writerPref its declared writer
	// preference.
	shape      string
	k          int
	writerPref bool
	// wake is the wake-up bound the process declared (0: its acquires do
	// not wait).
	wake   time.Duration
	events map[int64]*history.Op // announced extends, by seq
	// killed: the process was killed on purpose (crash-client); its end
	// is not the lock's fault.
	killed atomic.Bool
	// owner is the client whose process this is (one per client), under
	// which the extends it announces of a lease no client holds are
	// recorded; -2 for a process shared by every client.
	owner int
}

// Event is a line a lock process writes on its own, not a reply:
// what its background work does. To extend a lease by itself (a
// watchdog), it writes {"event":"extend","seq":S,"key":K,"token":T,
// "ttl_ms":N}, waits for lockcheck's {"ack":S} on its stdin, sends the
// extend, and after the reply writes {"event":"extended","seq":S,"ok":
// true|false} (or "error": "..." if the outcome is unknown). The ack makes
// the history's call time precede the command; the report's arrival
// follows its reply. {"event":"lost","key":K,"token":T} says it found a
// lease lost.
type Event struct {
	Event string `json:"event"`
	Seq   int64  `json:"seq"`
	Key   string `json:"key,omitempty"`
	Token string `json:"token,omitempty"`
	TTLms int64  `json:"ttl_ms,omitempty"`
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// tail keeps the last bytes written to it (a process's stderr).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(nothing on stderr)"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// Entry is the lock of --lock-cmd, named name: a process started
// with sh -c cmdline, with the Redis endpoints in its environment. It
// talks to Redis through a client of its own (OwnClient).
func Entry(name, cmdline, topology string) lockimpl.Entry {
	return lockimpl.Entry{Name: name, Description: "command " + cmdline, Topology: topology, OwnClient: true, Version: "command " + cmdline,
		Factory: func(env lockimpl.Env) (lockimpl.Locker, error) {
			p, err := Start(cmdline, topology, env)
			if err != nil {
				return nil, err
			}
			return p.shaped(), nil
		}}
}

// Start starts a lock process and waits until it answers a ping
// (StartTimeout), so that its start-up is charged to no op. It
// gets LOCKCHECK_REDIS_ADDRS (comma-separated host:port),
// LOCKCHECK_REDIS_PASSWORD, LOCKCHECK_TOPOLOGY (topology, or if empty
// the run's) and LOCKCHECK_OP_TIMEOUT_MS, in the sentinel topology
// LOCKCHECK_SENTINELS and LOCKCHECK_MASTER_NAME, and LOCKCHECK_DIAL_MAP
// where an address Redis or Sentinel announces is not the one to dial.
func Start(cmdline, topology string, env lockimpl.Env) (*Lock, error) {
	return startProcess(cmdline, topology, env, -2)
}

// StartTimeout bounds how long a lock process may take to answer
// its first request (a JVM takes seconds).
const StartTimeout = time.Minute

// startProcess is Start for owner's process (-2: every client's).
func startProcess(cmdline, topology string, env lockimpl.Env, owner int) (*Lock, error) {
	p, err := spawn(cmdline, topology, env)
	if err != nil {
		return nil, err
	}
	p.owner = owner
	go p.read(p.out)
	if err := p.ready(cmp.Or(env.StartTimeout, StartTimeout), env.Say); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// SlowStart is how long a lock process may take to answer its first
// ping before lockcheck says what it is waiting for.
const SlowStart = 3 * time.Second

// ready waits until the process answers a ping: any reply, ok or not. A
// process silent past SlowStart gets one line (say) naming the request
// and the reply lockcheck waits for: a process written before the ping
// existed would otherwise hang the run in silence until timeout.
func (p *Lock) ready(timeout time.Duration, say func(string)) error {
	if say != nil && timeout > SlowStart {
		t := time.AfterFunc(SlowStart, func() {
			say(fmt.Sprintf("waiting for lock process %q to answer its first request, {\"id\":N,\"op\":\"ping\"}: it must reply {\"id\":N,\"ok\":true} (giving up after %v)", p.cmdline, timeout))
		})
		defer t.Stop()
	}
	r, err := p.pingDeclared(timeout)
	p.emu.Lock()
	p.scope, p.round, p.add = r.Scope, time.Duration(r.TTLRoundMs)*time.Millisecond, time.Duration(r.TTLAddMs)*time.Millisecond
	p.own, p.waits = time.Duration(r.OpTimeoutMs)*time.Millisecond, r.AcquireWaitsTTL
	p.shape, p.writerPref = cmp.Or(r.Shape, ShapeMutex), r.WriterPreference
	p.wake = time.Duration(r.WakeBoundMs) * time.Millisecond
	p.emu.Unlock()
	var le *LateError
	if errors.As(err, &le) {
		return fmt.Errorf("%w: lock process %q did not answer {\"id\":%d,\"op\":\"ping\"} within %v (a lock process replies to every request, ping included: {\"id\":%d,\"ok\":true}); stderr: %s",
			lockimpl.ErrBadLock, p.cmdline, le.id, timeout, le.id, p.stderr.String())
	}
	if err != nil {
		return err
	}
	return p.fitsRun(r)
}

// pingRetry is how long ready waits between two pings answered with an
// error, and pingRetries how long it asks again: past a fault's stall
// of Redis (1 s in verify's scenarios).
const (
	pingRetry   = 100 * time.Millisecond
	pingRetries = 3 * time.Second
)

// pingDeclared pings the process until it answers with a reply that is
// not an error, for pingRetries at most within timeout; then the last
// reply goes, as any reply did before (a process written before the
// ping existed answers it with an error, and runs as a mutex). The reply
// to a ping declares the lock (its shape, its TTL rule, its wake-up
// bound), and a reply with an error (the process's own ping to Redis
// timed out, as under a stalled Redis) declares nothing: read as a
// declaration, it made a semaphore's process a mutex's, and verify's
// battery stopped on a configuration error (a survey run of Laravel's
// funnel of 3 at stall-quiet).
func (p *Lock) pingDeclared(timeout time.Duration) (Reply, error) {
	ctx := lockimpl.WithClient(context.Background(), p.owner)
	deadline := time.Now().Add(timeout)
	retries := time.Now().Add(min(pingRetries, timeout))
	for {
		r, err := p.ask(ctx, Request{Op: "ping"}, time.Until(deadline))
		if err != nil || r.Error == "" || time.Until(retries) < pingRetry {
			return r, err
		}
		time.Sleep(pingRetry)
	}
}

// fitsRun checks the shape the process declared in its ping's reply r
// against the run's: a semaphore's permits, and the options only a
// shape has. Each mismatch is one line.
func (p *Lock) fitsRun(r Reply) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: lock process %q %s", lockimpl.ErrBadLock, p.cmdline, fmt.Sprintf(format, args...))
	}
	switch {
	case p.shape != ShapeMutex && p.shape != ShapeSemaphore && p.shape != ShapeRWLock:
		return bad(`replied "shape":%q to its ping: a lock process's shape is %q (the default), %q or %q`, r.Shape, ShapeMutex, ShapeSemaphore, ShapeRWLock)
	case p.k > 1 && p.shape != ShapeSemaphore:
		return bad(`is a %s (its ping's reply says "shape":%q), not a semaphore: --permits %d takes a process that replies "shape":"semaphore" and reads each acquire's "permits"`, p.shape, p.shape, p.k)
	case r.MaxPermits != 0 && p.shape != ShapeSemaphore:
		return bad(`replied "max_permits":%d to its ping as a %s: max_permits is a semaphore's ("shape":"semaphore")`, r.MaxPermits, p.shape)
	case r.MaxPermits != 0 && p.k > r.MaxPermits:
		return bad(`takes at most %d permits (its ping's reply says "max_permits":%d), not --permits %d`, r.MaxPermits, r.MaxPermits, p.k)
	case r.WriterPreference && p.shape != ShapeRWLock:
		return bad(`replied "writer_preference":true to its ping as a %s: writer preference is a read-write lock's ("shape":"rwlock")`, p.shape)
	case r.WakeBoundMs < 0 || r.WakeBoundMs > history.MaxTTLms:
		return bad(`replied "wake_bound_ms":%d to its ping: a wake-up bound is 1 to %d ms (or absent: its acquires do not wait)`, r.WakeBoundMs, history.MaxTTLms)
	}
	return nil
}

// dialMap is LOCKCHECK_DIAL_MAP: "announced=dial,..." for each address
// Redis or Sentinel may announce that the process must dial elsewhere
// (a Sentinel names the master at the address its replicas use, behind
// lockcheck's peer proxy; clients reach it directly).
func dialMap(env lockimpl.Env) string {
	if env.DialAddr == nil {
		return ""
	}
	var pairs []string
	for _, a := range env.Announced {
		if to := env.DialAddr(a); to != a {
			pairs = append(pairs, a+"="+to)
		}
	}
	return strings.Join(pairs, ",")
}

// spawn starts the process.
func spawn(cmdline, topology string, env lockimpl.Env) (*Lock, error) {
	p := &Lock{cmdline: cmdline, timeout: env.OpTimeout, now: lockimpl.ClockOf(env), pending: map[int64]waiter{}, late: map[int64]*late{}, owner: -2, done: make(chan struct{}), k: env.Permits,
		record: env.Record, holders: map[string]holder{}, scopes: map[string]*lockimpl.Watch{}, events: map[int64]*history.Op{}}
	if p.record == nil {
		p.record = func(history.Op) {}
	}
	if p.timeout <= 0 {
		p.timeout = 2 * time.Second
	}
	cmd := exec.Command("sh", "-c", supervised(cmdline))
	cmd.Env = append(os.Environ(),
		"LOCKCHECK_REDIS_ADDRS="+strings.Join(env.Addrs, ","),
		"LOCKCHECK_REDIS_USER="+env.Username,
		"LOCKCHECK_REDIS_PASSWORD="+env.Password,
		"LOCKCHECK_TOPOLOGY="+cmp.Or(topology, env.Topology, "single"),
		"LOCKCHECK_OP_TIMEOUT_MS="+strconv.FormatInt(p.timeout.Milliseconds(), 10))
	if env.Permits > 1 {
		// A semaphore that takes its k once, at start-up.
		cmd.Env = append(cmd.Env, "LOCKCHECK_PERMITS="+strconv.Itoa(env.Permits))
	}
	if env.TLS != nil {
		// The program sets up TLS itself (an external Redis over TLS).
		cmd.Env = append(cmd.Env, "LOCKCHECK_REDIS_TLS=1")
	}
	if m := dialMap(env); m != "" {
		cmd.Env = append(cmd.Env, "LOCKCHECK_DIAL_MAP="+m)
	}
	if env.MasterName != "" {
		cmd.Env = append(cmd.Env, "LOCKCHECK_SENTINELS="+strings.Join(env.Sentinels, ","), "LOCKCHECK_MASTER_NAME="+env.MasterName,
			"LOCKCHECK_SENTINEL_PASSWORD="+env.SentinelPassword)
	}
	// Its own process group, so that a terminal's Ctrl-C reaches only
	// lockcheck and Close can end the whole group; gone with lockcheck
	// (supervised).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Stderr = &p.stderr
	// A pipe of our own for stdin: its writes take deadlines, so that a
	// process that stops reading cannot block lockcheck.
	inR, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = inR
	out, err := cmd.StdoutPipe()
	if err != nil {
		inR.Close()
		in.Close()
		return nil, err
	}
	err = cmd.Start()
	inR.Close()
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("%w: --lock-cmd %q: %v", lockimpl.ErrBadLock, cmdline, err)
	}
	p.cmd, p.in, p.w, p.out = cmd, in, bufio.NewWriter(in), out
	return p, nil
}

// supervised wraps cmdline so that its whole process group dies with
// lockcheck, however lockcheck dies: the parent-death signal reaches only
// lockcheck's own child, the shell, which leads the group and on that
// SIGTERM kills the group, the program's own children included. The
// program gets the shell's stdin and stdout, which the shell then lets
// go, so that the program closing its stdout is seen; its exit status is
// the shell's, and what it leaves running in the group gets SIGTERM when
// it exits (a second Ctrl-C may not leave lockcheck time to).
func supervised(cmdline string) string {
	return "trap 'kill -KILL 0' TERM\nexec 3<&0\n(\n" + cmdline + "\n) <&3 3<&- &\nexec 3<&- 0<&- 1>&-\n" +
		"wait $!\ns=$?\ntrap '' TERM\nkill -TERM 0 2>/dev/null\nexit $s\n"
}

// read dispatches replies until stdout closes, then reaps the process.
func (p *Lock) read(out io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxProcessLine)
	var broke error
	for broke == nil && sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			broke = p.line(line)
		}
	}
	switch err := sc.Err(); {
	case broke != nil:
	case errors.Is(err, bufio.ErrTooLong):
		broke = fmt.Errorf("wrote a line longer than %d bytes", maxProcessLine)
	case err != nil:
		broke = fmt.Errorf("its stdout failed: %v", err)
	}
	if broke != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	_, _ = io.Copy(io.Discard, out)
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(time.Second):
		// Its stdout is closed but it goes on: no reply can come.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		werr = <-exited
		if broke == nil && !p.closing.Load() {
			broke = errors.New("closed its stdout but kept running")
		}
	}
	p.mu.Lock()
	if p.breach != nil {
		broke = p.breach
	}
	if broke == nil {
		broke = fmt.Errorf("exited (%v)", exitStatus(werr))
	}
	p.dead = fmt.Errorf("%w: lock process %q %v; stderr: %s", lockimpl.ErrBadLock, p.cmdline, broke, p.stderr.String())
	if p.killed.Load() {
		p.dead = errKilled
	}
	pend := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, w := range pend {
		close(w.ch)
	}
}

// line takes one line the process wrote: a reply or an event. An error
// is a breach of the protocol, which ends the process.
func (p *Lock) line(line []byte) error {
	if !utf8.Valid(line) {
		// encoding/json would replace the bad bytes with U+FFFD, and
		// distinct tokens would read as one.
		return fmt.Errorf("wrote a line that is not UTF-8: %.200q", line)
	}
	if bytes.Contains(line, []byte(`"event"`)) {
		return p.event(line)
	}
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil || r.ID == 0 {
		return fmt.Errorf("wrote a line that is not a reply: %.200q (want {\"id\":N,\"ok\":true|false} or {\"id\":N,\"error\":\"...\"})", line)
	}
	p.mu.Lock()
	w, ok := p.pending[r.ID]
	delete(p.pending, r.ID)
	p.mu.Unlock()
	switch {
	case !ok && p.lateReply(r, p.now()):
		return nil // recorded with what it says
	case !ok && r.ID > p.nextID.Load():
		return fmt.Errorf("replied to request %d, which was never sent: %.200q", r.ID, line)
	case !ok:
		return fmt.Errorf("replied twice to request %d: %.200q", r.ID, line)
	}
	if w.acquire && r.OK && r.Token != "" {
		// Before the next line is read: an extend the process
		// announces next must find its holder.
		p.emu.Lock()
		p.holders[r.Token] = holder{client: w.client, key: w.key}
		p.emu.Unlock()
	}
	w.ch <- r // buffered
	return nil
}

// maxProcessLine bounds a line a lock process writes.
const maxProcessLine = 1 << 20

// errKilled is the outcome of a request to a process killed on purpose:
// it may have been half done.
var errKilled = errors.New("lock process killed (crash-client)")

// event handles one Event line.
func (p *Lock) event(line []byte) error {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil || e.Seq == 0 && e.Event != "lost" {
		return fmt.Errorf("wrote an event that is not one: %.200q (want {\"event\":\"extend\"|\"extended\"|\"lost\",\"seq\":N,...})", line)
	}
	now := p.now()
	p.emu.Lock()
	defer p.emu.Unlock()
	switch e.Event {
	case "extend":
		if e.Key == "" || e.Token == "" || e.TTLms <= 0 {
			return fmt.Errorf("announced an extend without key, token or ttl_ms: %.200q", line)
		}
		if len(p.events) >= maxUnreported {
			return fmt.Errorf("announced %d extends whose outcome it never reported", len(p.events))
		}
		h, ok := p.holders[e.Token]
		client := h.client
		if !ok {
			client = p.owner
		}
		p.events[e.Seq] = &history.Op{Process: client, F: history.Extend, Key: e.Key, Token: e.Token, TTLms: e.TTLms, Call: now}
		if err := p.send(fmt.Appendf(nil, "{\"ack\":%d}\n", e.Seq)); err != nil {
			delete(p.events, e.Seq) // never acknowledged: never sent
		}
	case "extended":
		op := p.events[e.Seq]
		if op == nil {
			return fmt.Errorf("reported extend %d, which it never announced", e.Seq)
		}
		delete(p.events, e.Seq)
		op.Return, op.Type = now, history.OK
		switch {
		case e.Error != "":
			op.Type, op.Error = history.Info, e.Error
		case !e.OK:
			op.Type = history.Fail
		}
		p.record(*op)
	case "lost":
		if w := p.scopes[e.Token]; w != nil {
			delete(p.scopes, e.Token)
			w.Lose(fmt.Errorf("lock process %q lost the lease of %s", p.cmdline, e.Key))
		}
	default:
		return fmt.Errorf("wrote an unknown event %q (want extend, extended or lost)", e.Event)
	}
	return nil
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// do sends one request and waits for its reply, the op timeout or ctx.
func (p *Lock) do(ctx context.Context, req Request) (Reply, error) {
	return p.ask(ctx, req, p.timeout)
}

// ask sends one request and waits for its reply, timeout or ctx.
func (p *Lock) ask(ctx context.Context, req Request, timeout time.Duration) (Reply, error) {
	req.ID = p.nextID.Add(1)
	req.Client = lockimpl.ClientFrom(ctx)
	ch := make(chan Reply, 1)
	p.mu.Lock()
	if p.dead != nil {
		err := p.dead
		p.mu.Unlock()
		return Reply{}, err
	}
	p.pending[req.ID] = waiter{ch: ch, client: req.Client, key: req.Key, acquire: req.Op == "acquire"}
	p.mu.Unlock()
	b, _ := json.Marshal(req) // a struct of strings and ints cannot fail
	if err := p.send(append(b, '\n')); err != nil {
		p.forget(req.ID)
		// The process's stdin is gone: it exited, and the reader will say
		// how. The request never reached it.
		<-p.done
		return Reply{}, p.deadErr()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return Reply{}, p.deadErr()
		}
		return r, nil
	case <-t.C:
		return p.giveUp(req, ch, errNoReply(timeout))
	case <-ctx.Done():
		return p.giveUp(req, ch, ctx.Err())
	}
}

// giveUp stops waiting for req's reply (why). A reply the reader handed
// over meanwhile is taken after all; else the request is late (LateError).
func (p *Lock) giveUp(req Request, ch chan Reply, why error) (Reply, error) {
	if !p.forget(req.ID) {
		if r, ok := <-ch; ok {
			return r, nil
		}
		return Reply{}, p.deadErr()
	}
	return Reply{}, p.gaveUp(req, why)
}

// send writes one line to the process within the op timeout. A process
// that does not take it in that time has stopped reading its stdin: it is
// killed, and the run stops with that breach (the reader reports it).
func (p *Lock) send(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.in.SetWriteDeadline(time.Now().Add(p.timeout))
	_, err := p.w.Write(line)
	if err == nil {
		err = p.w.Flush()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.mu.Lock()
		p.breach = fmt.Errorf("does not read its stdin (a request could not be written within the op timeout %v)", p.timeout)
		p.mu.Unlock()
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}

// waiter is a request awaiting its reply: where the reply goes, and who
// asked (an acquire's token is its client's from the reply on).
type waiter struct {
	ch      chan Reply
	client  int
	key     string
	acquire bool
}

// holder is a lease the process granted: the client it went to, its key.
type holder struct {
	client int
	key    string
}

// forget moves request id from pending to late, and reports whether it
// was still pending (not yet answered, nor ended with the process).
func (p *Lock) forget(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.pending[id]
	if ok {
		delete(p.pending, id)
		p.late[id] = &late{waiter: w}
	}
	return ok
}

func (p *Lock) deadErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// outcome maps a reply to the lockimpl.Locker error convention.
func outcome(r Reply, req Request, definite error) error {
	switch {
	case r.NotSent:
		return fmt.Errorf("%s %s: %s: %w", req.Op, req.Key, r.Error, lockimpl.ErrNotSent)
	case r.Undone && req.Op == "acquire":
		return fmt.Errorf("%s %s: %w", req.Op, req.Key, lockimpl.ErrUndone)
	case r.Undone:
		return fmt.Errorf("%w: a reply to %s says undone, which only an acquire can be", lockimpl.ErrBadLock, req.Op)
	case r.Error != "" && r.Answered:
		return fmt.Errorf("%s %s: %s: %w", req.Op, req.Key, r.Error, lockimpl.ErrNoOutcome)
	case r.Error != "":
		return fmt.Errorf("%s %s: %s", req.Op, req.Key, r.Error)
	case !r.OK:
		return definite
	}
	return nil
}

// Acquire implements lockimpl.Locker (a read-write lock's write acquire).
// The process chooses the token; one it leaves empty is an error in the
// process.
func (p *Lock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	return p.acquireIn(ctx, key, ttl, history.AccessWrite)
}

// acquireIn is an acquire in access mode, which the request carries to a
// read-write lock's process; a semaphore's carries its permits.
func (p *Lock) acquireIn(ctx context.Context, key string, ttl time.Duration, access string) (lockimpl.Lease, error) {
	return p.acquireFor(ctx, key, ttl, access, 0)
}

// acquireFor is acquireIn for an acquire that may wait up to wait for
// the key (0: a try), which the request carries.
func (p *Lock) acquireFor(ctx context.Context, key string, ttl time.Duration, access string, wait time.Duration) (lockimpl.Lease, error) {
	req := Request{Op: "acquire", Key: key, TTLms: ttl.Milliseconds(), WaitMs: wait.Milliseconds()}
	switch p.Shape() {
	case ShapeSemaphore:
		req.Permits = max(p.k, 1)
	case ShapeRWLock:
		req.Access = access
	}
	call := time.Duration(p.now())
	r, err := p.ask(ctx, req, p.timeout+p.acquireWait(ttl)+wait)
	if err == nil {
		err = outcome(r, req, lockimpl.ErrNotAcquired)
	}
	if err != nil {
		return lockimpl.Lease{}, err
	}
	if r.Token == "" {
		return lockimpl.Lease{}, fmt.Errorf("%w: lock process %q replied ok to an acquire without a token", lockimpl.ErrBadLock, p.cmdline)
	}
	l := lockimpl.Lease{Key: key, Token: r.Token, Fence: r.Fence, Acquired: call, TTL: ttl}
	if wait > 0 {
		l.Acquired = 0 // the try that took the key: unknown unless the process says
		if r.TriedMs != nil && *r.TriedMs >= 0 {
			l.Acquired = call + time.Duration(*r.TriedMs)*time.Millisecond
		}
	}
	p.emu.Lock()
	defer p.emu.Unlock()
	if p.scope != "" {
		l.Watch = lockimpl.NewScope()
		p.scopes[l.Token] = l.Watch
	}
	return l, nil
}

// AcquireWait implements lockimpl.Waiter: an acquire in the mode ctx
// names (a write if none) that the process may hold up to wait, as its
// library's blocking acquire does.
func (p *Lock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (lockimpl.Lease, error) {
	return p.acquireFor(ctx, key, ttl, lockimpl.AccessOf(ctx), wait)
}

// WakeBound implements lockimpl.Waiter, as the process declared it.
func (p *Lock) WakeBound() time.Duration {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.wake
}

// CanWait says whether the process declared a wake-up bound: only then
// is it a lockimpl.Waiter (lockimpl.WaiterOf).
func (p *Lock) CanWait() bool { return p.WakeBound() > 0 }

// acquireWait is how long an acquire of ttl may wait for a taken key
// before it answers (AcquireWaitsTTL): ttl rounded up, or 0.
func (p *Lock) acquireWait(ttl time.Duration) time.Duration {
	p.emu.Lock()
	defer p.emu.Unlock()
	if !p.waits {
		return 0
	}
	return lockimpl.TTLRule{Round: p.round}.KeyTTL(ttl)
}

// KeyTTL implements lockimpl.KeyTTLer: ttl rounded up, and added to,
// as the process said in its first ping's reply.
func (p *Lock) KeyTTL(ttl time.Duration) time.Duration {
	p.emu.Lock()
	defer p.emu.Unlock()
	return lockimpl.TTLRule{Round: p.round, Add: p.add}.KeyTTL(ttl)
}

// Shape is the lock's shape, as the process declared it in its first
// ping's reply (ShapeMutex if it declared none).
func (p *Lock) Shape() string {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.shape
}

// Permits implements lockimpl.Permitter: a semaphore's the run's
// permits, any other shape's 1.
func (p *Lock) Permits() int {
	if p.Shape() == ShapeSemaphore {
		return max(p.k, 1)
	}
	return 1
}

// WritersPreferred is the writer preference the process declared.
func (p *Lock) WritersPreferred() bool {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.writerPref
}

// shaped is p as the Locker of its shape: a read-write lock's process is
// a lockimpl.ReadWriter.
func (p *Lock) shaped() lockimpl.Locker {
	if p.Shape() == ShapeRWLock {
		return rwProcess{p}
	}
	return p
}

// rwProcess is the process of a read-write lock.
type rwProcess struct{ *Lock }

// Acquire implements lockimpl.Locker: in the mode ctx names
// (lockimpl.AccessOf), a write if none.
func (p rwProcess) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	return p.AcquireIn(ctx, key, ttl, lockimpl.AccessOf(ctx))
}

// AcquireIn implements lockimpl.ReadWriter.
func (p rwProcess) AcquireIn(ctx context.Context, key string, ttl time.Duration, access string) (lockimpl.Lease, error) {
	if err := lockimpl.CheckAccess(access); err != nil {
		return lockimpl.Lease{}, err
	}
	return p.acquireIn(ctx, key, ttl, access)
}

// Scope implements lockimpl.Scoped: what the process said of its leases
// in its first ping's reply.
func (p *Lock) Scope() string {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.scope
}

// OwnTimeout implements lockimpl.OwnTimeouter: the command timeout the
// process declared in its first ping's reply.
func (p *Lock) OwnTimeout() time.Duration {
	p.emu.Lock()
	defer p.emu.Unlock()
	return p.own
}

// Release implements lockimpl.Locker.
func (p *Lock) Release(ctx context.Context, l lockimpl.Lease) error {
	req := Request{Op: "release", Key: l.Key, Token: l.Token}
	r, err := p.do(ctx, req)
	p.emu.Lock()
	delete(p.holders, l.Token)
	delete(p.scopes, l.Token)
	p.emu.Unlock()
	if err != nil {
		return err
	}
	return outcome(r, req, lockimpl.ErrNotHeld)
}

// Extend implements lockimpl.Locker; the TTL replaces what the lease had left.
func (p *Lock) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	req := Request{Op: "extend", Key: l.Key, Token: l.Token, TTLms: ttl.Milliseconds()}
	call := time.Duration(p.now())
	r, err := p.do(ctx, req)
	if err == nil {
		err = outcome(r, req, lockimpl.ErrNotHeld)
	}
	if err != nil {
		return lockimpl.Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close closes the process's stdin, which asks it to exit, and ends its
// process group if it has not within two seconds.
func (p *Lock) Close() error {
	p.close.Do(func() {
		p.mu.Lock()
		p.closing.Store(true)
		p.mu.Unlock()
		p.wg.Wait()
		p.wmu.Lock()
		closed := p.now()
		_ = p.in.Close()
		p.wmu.Unlock()
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		// What the program left running in its group (a child that
		// outlived it) goes too.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.unreported()
		p.closeLate()
		p.leftHeld(closed)
	})
	return nil
}

// leftHeld records, for each lease the process granted that no release
// was asked of (a late grant lockcheck no longer gave back, a lease its
// client held at the end), a release of unknown outcome from when its
// stdin closed: a program may release what it holds as it exits (a PHP
// Fiber suspended inside malkusch/lock's synchronized() is unwound at
// shutdown and its unlock runs; tooz's stop() releases its locks), or
// leave it to expire. Without it, a grant another process made after
// that exit contradicts a lease the history still shows held.
func (p *Lock) leftHeld(closed int64) {
	p.emu.Lock()
	defer p.emu.Unlock()
	tokens := slices.Sorted(maps.Keys(p.holders))
	now := p.now()
	for _, t := range tokens {
		h := p.holders[t]
		p.record(history.Op{Process: h.client, F: history.Release, Type: history.Info, Key: h.key, Token: t,
			Call: closed, Return: max(now, closed), Error: "held when lockcheck closed the lock process: its exit may release it"})
	}
	clear(p.holders)
}

// unreported records the extends the process announced and never
// reported: they were sent, so they may have taken effect (info).
func (p *Lock) unreported() {
	p.emu.Lock()
	defer p.emu.Unlock()
	seqs := make([]int64, 0, len(p.events))
	for seq := range p.events {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	now := p.now()
	for _, seq := range seqs {
		op := p.events[seq]
		op.Type, op.Return, op.Error = history.Info, max(now, op.Call), "announced by the lock process, its outcome never reported"
		p.record(*op)
	}
	clear(p.events)
}

// maxUnreported bounds the extends a process may have announced and not
// yet reported.
const maxUnreported = 10_000

// PID is the process's id (for tests).
func (p *Lock) PID() int { return p.cmd.Process.Pid }
