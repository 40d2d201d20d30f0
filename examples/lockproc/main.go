// Command lockproc is an example lock process for lockcheck run --lock-cmd:
// the setnx lock (SET key token NX PX ttl, Lua compare-and-delete release,
// compare-and-PEXPIRE extend) behind lockcheck's JSON-lines protocol. A lock
// in any language follows the same shape: read the Redis endpoints from the
// environment, read one request per line on stdin, answer each on stdout,
// concurrently, in any order, and exit when stdin closes.
//
// With -watchdog it also keeps each lease alive by itself, as most Java and
// Go lock libraries do: every TTL/3 it extends the lease in the
// background, reporting each extend as the protocol's events ask
// (announce, wait for the ack, send, report), until the release or a
// failed extend (the lease is lost).
//
//	lockcheck run --lock-cmd "go run ./examples/lockproc"
//	lockcheck run --lock-cmd "go run ./examples/lockproc -watchdog" --lock-cmd-per-client --nemesis pause-client
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

type request struct {
	Ack   int64  `json:"ack"` // lockcheck's ack of an announced extend
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	TTLms int64  `json:"ttl_ms"`
	Token string `json:"token"`
}

type reply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Token string `json:"token,omitempty"`
	Error string `json:"error,omitempty"`
	// OpTimeoutMs, on a ping's reply, declares -timeout: lockcheck's
	// verify then stalls Redis for longer than it.
	OpTimeoutMs int64 `json:"op_timeout_ms,omitempty"`
}

var (
	release   = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	reentrant = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("pexpire", KEYS[1], ARGV[2]) return 1 end return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) and 1 or 0`)
	extend    = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

// opTimeout bounds each command (LOCKCHECK_OP_TIMEOUT_MS).
var opTimeout = 5 * time.Second

// declared is the command timeout the process declares to lockcheck
// (-timeout; 0: lockcheck's own, LOCKCHECK_OP_TIMEOUT_MS).
var declared time.Duration

// acquire sets key to token for ttlMs if it is free: a plain SET NX PX,
// or (-reentrant) reacquire.
var acquire = func(ctx context.Context, c redis.UniversalClient, key, token string, ttlMs int64) (bool, error) {
	err := c.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: time.Duration(ttlMs) * time.Millisecond}).Err()
	return err == nil, err
}

// reacquire is acquire by a script that also answers yes, renewing the
// TTL, when key already holds token, sent again (3 times at most) while
// the connection fails: a resent acquire whose first attempt took effect
// finds its own token.
func reacquire(ctx context.Context, c redis.UniversalClient, key, token string, ttlMs int64) (bool, error) {
	var err error
	for try := 0; try < 4 && ctx.Err() == nil; try++ {
		var n int64
		if n, err = reentrant.Run(ctx, c, []string{key}, token, ttlMs).Int64(); err == nil || errors.Is(err, redis.Nil) {
			return n == 1, err
		}
	}
	return false, err
}

// dialer dials where LOCKCHECK_DIAL_MAP says: lockcheck's Sentinels name
// the master at the address its replicas use (behind the proxy that a
// partition cuts); a client reaches it at the one the map gives.
func dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	to := map[string]string{}
	for _, pair := range strings.Split(os.Getenv("LOCKCHECK_DIAL_MAP"), ",") {
		if from, addr, ok := strings.Cut(pair, "="); ok {
			to[from] = addr
		}
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := to[addr]; ok {
			addr = a
		}
		return d.DialContext(ctx, network, addr)
	}
}

func main() {
	addrs := strings.Split(os.Getenv("LOCKCHECK_REDIS_ADDRS"), ",")
	if addrs[0] == "" {
		fmt.Fprintln(os.Stderr, "lockproc: LOCKCHECK_REDIS_ADDRS is not set (run me with lockcheck run --lock-cmd)")
		os.Exit(2)
	}
	watchdog := flag.Bool("watchdog", false, "extend each lease every TTL/3 in the background until its release")
	timeout := flag.Duration("timeout", 0, "the command timeout the process sets itself, as applications do (a 2 s socket timeout), in place of lockcheck's op timeout (LOCKCHECK_OP_TIMEOUT_MS), declared in its ping's reply (op_timeout_ms): a client that waits out a stall shorter than it, which verify then stalls for longer")
	resend := flag.Bool("resend", false, "the classic mistake, for lost-reply to catch: go-redis's default of resending a command whose reply was lost (3 retries), so a resent SET NX finds the key its first attempt set and reports not acquired while it holds it")
	reentrant := flag.Bool("reentrant", false, "a correct lock that resends: an acquire whose reply was lost is sent again (3 times at most) by a script that also takes the key when it holds the acquire's own token (as go-zero's), so a resent acquire whose first attempt took effect is told it holds the lock; releases and extends, which cannot tell their own first attempt from a lost lease, are not resent")
	flag.Parse()
	if *reentrant {
		acquire = reacquire
	}
	// No retries: a retried SET NX whose first reply was lost would read
	// as a failure while we hold the lock.
	retries := -1
	if *resend {
		retries = 3
	}
	// Each command gets lockcheck's op timeout: one that outlasts it (a
	// paused Redis) ends with an error, indeterminate, as lockcheck's own
	// clients' do.
	if ms, err := strconv.Atoi(os.Getenv("LOCKCHECK_OP_TIMEOUT_MS")); err == nil && ms > 0 {
		opTimeout = time.Duration(ms) * time.Millisecond
	}
	if *timeout > 0 {
		opTimeout, declared = *timeout, *timeout
	}
	opts := &redis.Options{Addr: addrs[0], Password: os.Getenv("LOCKCHECK_REDIS_PASSWORD"), MaxRetries: retries, PoolSize: 256,
		ReadTimeout: opTimeout, WriteTimeout: opTimeout}
	var c redis.UniversalClient = redis.NewClient(opts)
	if os.Getenv("LOCKCHECK_TOPOLOGY") == "sentinel" {
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: os.Getenv("LOCKCHECK_MASTER_NAME"),
			SentinelAddrs: strings.Split(os.Getenv("LOCKCHECK_SENTINELS"), ","), Password: opts.Password, MaxRetries: retries, PoolSize: 256,
			ReadTimeout: opTimeout, WriteTimeout: opTimeout, Dialer: dialer()})
	}
	defer c.Close()

	p := &proc{c: c, out: bufio.NewWriter(os.Stdout), acks: map[int64]chan struct{}{}, dogs: map[string]chan struct{}{}, watchdog: *watchdog}
	var wg sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "lockproc: bad request %q: %v\n", in.Text(), err)
			os.Exit(1)
		}
		if req.Ack != 0 {
			p.acked(req.Ack)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.write(p.handle(req))
		}()
	}
	wg.Wait()
}

// proc is the process's state: the client, stdout, and the watchdogs.
type proc struct {
	c        redis.UniversalClient
	watchdog bool
	mu       sync.Mutex
	out      *bufio.Writer
	seq      int64
	acks     map[int64]chan struct{}  // announced extends awaiting their ack
	dogs     map[string]chan struct{} // watchdog stop channels, by token
}

// write writes one line (a reply or an event) to stdout.
func (p *proc) write(v any) {
	b, _ := json.Marshal(v)
	p.mu.Lock()
	p.out.Write(append(b, '\n'))
	p.out.Flush()
	p.mu.Unlock()
}

func (p *proc) acked(seq int64) { closeTaken(p, p.acks, seq) }

// closeTaken takes m[k] out of m under p.mu and closes it, if it was
// there: an ack awaited, a watchdog to stop.
func closeTaken[K comparable](p *proc, m map[K]chan struct{}, k K) {
	p.mu.Lock()
	ch := m[k]
	delete(m, k)
	p.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

func (p *proc) handle(req request) reply {
	if req.Op == "release" {
		p.stopDog(req.Token)
	}
	r := handle(p.c, req)
	if req.Op == "acquire" && r.OK && p.watchdog {
		stop := make(chan struct{})
		p.mu.Lock()
		p.dogs[r.Token] = stop
		p.mu.Unlock()
		go p.watch(req.Key, r.Token, req.TTLms, stop)
	}
	return r
}

func (p *proc) stopDog(token string) { closeTaken(p, p.dogs, token) }

// event is a line the process writes on its own (README: "Lock
// processes").
type event struct {
	Event string `json:"event"`
	Seq   int64  `json:"seq,omitempty"`
	Key   string `json:"key,omitempty"`
	Token string `json:"token,omitempty"`
	TTLms int64  `json:"ttl_ms,omitempty"`
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// watch extends the lease every TTL/3 until stop, or until an extend
// fails: then the lease is lost.
func (p *proc) watch(key, token string, ttlMs int64, stop chan struct{}) {
	t := time.NewTicker(time.Duration(ttlMs) * time.Millisecond / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		p.seq++
		seq, ack := p.seq, make(chan struct{})
		p.acks[seq] = ack
		p.mu.Unlock()
		p.write(event{Event: "extend", Seq: seq, Key: key, Token: token, TTLms: ttlMs})
		<-ack // the history's call time is taken before we send
		r := handle(p.c, request{Op: "extend", Key: key, Token: token, TTLms: ttlMs})
		p.write(event{Event: "extended", Seq: seq, OK: r.OK, Error: r.Error})
		if !r.OK {
			p.write(event{Event: "lost", Key: key, Token: token})
			p.stopDog(token)
			return
		}
	}
}

func handle(c redis.UniversalClient, req request) reply {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r := reply{ID: req.ID}
	var err error
	switch req.Op {
	case "acquire":
		var b [16]byte
		_, _ = rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		r.OK, err = acquire(ctx, c, req.Key, token, req.TTLms)
		r.Token = token
	case "release":
		var n int64
		n, err = release.Run(ctx, c, []string{req.Key}, req.Token).Int64()
		r.OK = err == nil && n == 1
	case "extend":
		var n int64
		n, err = extend.Run(ctx, c, []string{req.Key}, req.Token, req.TTLms).Int64()
		r.OK = err == nil && n == 1
	case "ping": // lockcheck's start-up check: ready once Redis answers
		err = c.Ping(ctx).Err()
		r.OK, r.OpTimeoutMs = err == nil, declared.Milliseconds()
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	switch {
	case errors.Is(err, redis.Nil):
		r.OK, r.Token = false, "" // definite: the key is taken
	case err != nil:
		r.OK, r.Token, r.Error = false, "", err.Error() // indeterminate
	}
	return r
}
