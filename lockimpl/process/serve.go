package process

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// EnvFromProcess is the lockimpl.Env a lock process is given in its
// environment (Start): where Redis is, how to authenticate, the op
// timeout, a semaphore's permits.
func EnvFromProcess() lockimpl.Env {
	env := lockimpl.Env{Username: os.Getenv("LOCKCHECK_REDIS_USER"), Password: os.Getenv("LOCKCHECK_REDIS_PASSWORD"),
		Topology: os.Getenv("LOCKCHECK_TOPOLOGY"), MasterName: os.Getenv("LOCKCHECK_MASTER_NAME"),
		SentinelPassword: os.Getenv("LOCKCHECK_SENTINEL_PASSWORD"), PoolSize: 256, Now: Now}
	if a := os.Getenv("LOCKCHECK_REDIS_ADDRS"); a != "" {
		env.Addrs = strings.Split(a, ",")
	}
	if s := os.Getenv("LOCKCHECK_SENTINELS"); s != "" {
		env.Sentinels = strings.Split(s, ",")
	}
	if m := os.Getenv("LOCKCHECK_DIAL_MAP"); m != "" {
		to := map[string]string{}
		for _, pair := range strings.Split(m, ",") {
			if from, addr, ok := strings.Cut(pair, "="); ok {
				to[from] = addr
				env.Announced = append(env.Announced, from)
			}
		}
		env.DialAddr = func(addr string) string { return cmp.Or(to[addr], addr) }
	}
	if ms, err := strconv.Atoi(os.Getenv("LOCKCHECK_OP_TIMEOUT_MS")); err == nil && ms > 0 {
		env.OpTimeout = time.Duration(ms) * time.Millisecond
	}
	if k, err := strconv.Atoi(os.Getenv("LOCKCHECK_PERMITS")); err == nil && k > 1 {
		env.Permits = k
	}
	return env
}

// serveStart is the origin of Now.
var serveStart = time.Now()

// Now is the clock a served lock is given (EnvFromProcess's Env.Now), so
// that Serve reads the instants its leases carry: a waiter's try that
// took the key (Reply.TriedMs).
func Now() int64 { return int64(time.Since(serveStart)) }

// Serve speaks the lock-process protocol for l (docs/own-lock.md): a
// request per line from in, each served on a goroutine of its own, its
// reply a line on out, until in ends. A lease the lock later loses (its
// Watch) is reported with a lost event; a lock whose leases are scopes
// says so in the ping's reply. So any Go lock runs as a lock process,
// one per client if asked (lockcheck serve), where a stop-the-world pause
// (SIGSTOP) stops the library's own goroutines too. The ping's reply
// declares the lock's shape (lockimpl.ShapeOfLock) and, for a lock that
// can wait (lockimpl.Waiter), its wake-up bound; a read-write lock's
// acquires are taken in the mode their request says, and an acquire with
// a wait waits (AcquireWait).
func Serve(l lockimpl.Locker, opTimeout time.Duration, in io.Reader, out io.Writer) error {
	s := &server{l: l, timeout: opTimeout, out: json.NewEncoder(out), leases: map[string]lockimpl.Lease{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxProcessLine)
	var wg sync.WaitGroup
	for sc.Scan() {
		var req struct {
			Request
			Ack int64 `json:"ack"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return err
		}
		if req.Ack != 0 {
			continue // Serve announces no extend of its own
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.write(s.serve(req.Request))
		}()
	}
	wg.Wait()
	return sc.Err()
}

type server struct {
	l       lockimpl.Locker
	timeout time.Duration
	mu      sync.Mutex
	out     *json.Encoder
	leases  map[string]lockimpl.Lease
}

func (s *server) write(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.out.Encode(v)
}

// serve answers one request.
func (s *server) serve(req Request) Reply {
	ctx := lockimpl.WithClient(context.Background(), req.Client)
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout+time.Duration(req.WaitMs)*time.Millisecond)
		defer cancel()
	}
	r := Reply{ID: req.ID}
	var err error
	switch req.Op {
	case "ping":
		r.OK, r.Scope = true, lockimpl.ScopeOf(s.l)
		if tr, ok := s.l.(lockimpl.TTLRuler); ok {
			rule := tr.TTLRule()
			r.TTLRoundMs, r.TTLAddMs = rule.Round.Milliseconds(), rule.Add.Milliseconds()
		}
		r.Shape, r.WriterPreference = servedShape(s.l), lockimpl.WritersPreferredOf(s.l)
		if w, ok := lockimpl.WaiterOf(s.l); ok {
			r.WakeBoundMs = (w.WakeBound() + time.Millisecond - 1).Milliseconds()
		}
		return r
	case "acquire":
		var l lockimpl.Lease
		read := Now()
		if l, err = s.acquire(ctx, req); err == nil {
			r.Token, r.Fence = l.Token, l.Fence
			r.TriedMs = triedMs(req, l, read)
			s.hold(l)
		}
	case "release":
		l, ok := s.lease(req.Token, true)
		if !ok {
			return r // a lease this process never granted: not held
		}
		err = s.l.Release(ctx, l)
	case "extend":
		l, ok := s.lease(req.Token, false)
		if !ok {
			return r
		}
		if l, err = s.l.Extend(ctx, l, time.Duration(req.TTLms)*time.Millisecond); err == nil {
			s.hold(l)
		}
	default:
		r.Error = "unknown op " + req.Op
		return r
	}
	switch {
	case err == nil:
		r.OK = true
	case errors.Is(err, lockimpl.ErrNotAcquired), errors.Is(err, lockimpl.ErrNotHeld):
	case errors.Is(err, lockimpl.ErrUndone) && req.Op == "acquire":
		r.Undone = true
	default:
		r.Error, r.NotSent = err.Error(), errors.Is(err, lockimpl.ErrNotSent)
	}
	return r
}

// triedMs is, for an acquire that waited, when its lock sent the try that
// took the key, in whole ms after the request was read (down: never
// later than it was): nil where the lease's instant is not on Now's
// clock, or for a try.
func triedMs(req Request, l lockimpl.Lease, read int64) *int64 {
	t := int64(l.Acquired)
	if req.WaitMs <= 0 || t < read || t > Now() {
		return nil
	}
	ms := time.Duration(t - read).Milliseconds()
	return &ms
}

// acquire takes req's lease: in the mode it names from a read-write
// lock; a write (or no mode) from any other. A semaphore's permits were
// its lock's from the start (LOCKCHECK_PERMITS): a request naming others
// is answered with an error, never served as if it had the same.
func (s *server) acquire(ctx context.Context, req Request) (lockimpl.Lease, error) {
	ttl := time.Duration(req.TTLms) * time.Millisecond
	if k := lockimpl.PermitsOf(s.l); req.Permits != 0 && req.Permits != k {
		return lockimpl.Lease{}, fmt.Errorf("acquire %s of %d permits: the served lock has %d (LOCKCHECK_PERMITS)", req.Key, req.Permits, k)
	}
	if w, ok := lockimpl.WaiterOf(s.l); ok && req.WaitMs > 0 {
		return w.AcquireWait(lockimpl.WithAccess(ctx, req.Access), req.Key, ttl, time.Duration(req.WaitMs)*time.Millisecond)
	}
	if req.WaitMs > 0 {
		return lockimpl.Lease{}, fmt.Errorf("acquire %s with a wait of %d ms: the served lock cannot wait (it declared no wake-up bound)", req.Key, req.WaitMs)
	}
	if rw, ok := lockimpl.ReadWriterOf(s.l); ok && req.Access != "" {
		return rw.AcquireIn(ctx, req.Key, ttl, req.Access)
	}
	if req.Access != "" && req.Access != history.AccessWrite {
		return lockimpl.Lease{}, fmt.Errorf("acquire %s in access %q: the served lock is no read-write lock", req.Key, req.Access)
	}
	return s.l.Acquire(ctx, req.Key, ttl)
}

// hold keeps l, and reports its loss if the lock watches it.
func (s *server) hold(l lockimpl.Lease) {
	s.mu.Lock()
	_, again := s.leases[l.Token]
	s.leases[l.Token] = l
	s.mu.Unlock()
	if l.Watch == nil || again {
		return
	}
	go func() {
		<-l.Watch.Lost()
		s.mu.Lock()
		_, held := s.leases[l.Token]
		s.mu.Unlock()
		if held {
			s.write(Event{Event: "lost", Key: l.Key, Token: l.Token})
		}
	}()
}

// lease is the lease of token, taken out of the map if drop.
func (s *server) lease(token string, drop bool) (lockimpl.Lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[token]
	if drop {
		delete(s.leases, token)
	}
	return l, ok
}

// servedShape is the shape a served lock declares: its own, but a
// reentrant lock's is a mutex's, the protocol having no re-entry to drive
// it with.
func servedShape(l lockimpl.Locker) string {
	if sh := lockimpl.ShapeOfLock(l); sh != lockimpl.ShapeReentrant {
		return sh
	}
	return lockimpl.ShapeMutex
}
