// Command sublock is an example lock process for lockcheck run --lock-cmd
// of a shape lockcheck's own locks do not have: a lock held by a
// connection's subscription. No key, no TTL, no token on Redis: a client
// holds key K while its connection is subscribed to channel K and no other
// connection is. To acquire it subscribes on a connection of its own and
// asks PUBSUB NUMSUB K: one subscriber (itself) and it holds the lock;
// more, and it closes the connection and has not. Release closes the
// connection. A holder's lease is a scope (its first ping says so): it
// lasts until its connection fails, and then the process tells lockcheck
// the lease is lost ({"event":"lost"}), so the holder stops.
//
// It is correct on one node: a paused holder keeps its subscription (no
// TTL runs out), a cut-off holder's connection stays open on Redis, and a
// killed node drops every subscription at once, which each holder's
// connection sees fail before the node is back. It is not on Sentinel: a
// subscription does not move to a promoted replica, so it refuses any
// topology but single.
//
// Each subscription's connection is dialled once: go-redis's PubSub
// would dial again after a failure and subscribe anew, holding the lock
// again behind its holder's back; a dialer that refuses a second dial
// makes the failure final.
//
// With -unwatched it is the classic mistake of such locks: a holder is
// never told its subscription is gone, and goes on after a kill of the
// node while another client, after the restart, subscribes alone.
//
//	lockcheck verify --lock-cmd "go run ./examples/sublock" --lock-cmd-per-client --lock-no-extend --lock-topology single
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
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

type request struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	Token string `json:"token"`
}

type reply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Token string `json:"token,omitempty"`
	Error string `json:"error,omitempty"`
	Scope string `json:"scope,omitempty"`
}

// event is a line the process writes on its own: a lease lost.
type event struct {
	Event string `json:"event"`
	Key   string `json:"key"`
	Token string `json:"token"`
}

// scope is what the first ping says of the leases.
const scope = "a lease is a connection's subscription to the key's channel: no key, no TTL; it lasts until its release or until the connection fails"

// proc is the process: the client for PUBSUB NUMSUB, the options each
// subscription's client is made from, stdout, and the leases held.
type proc struct {
	c     *redis.Client
	opts  redis.Options
	mu    sync.Mutex
	out   *bufio.Writer
	held  map[string]*lease // by token
	timeo time.Duration
	// unwatched: a lost subscription is not reported (-unwatched).
	unwatched bool
}

// lease is one held lock: its subscription and whether it was released.
type lease struct {
	sc       *redis.Client
	ps       *redis.PubSub
	released bool
}

func main() {
	addr := os.Getenv("LOCKCHECK_REDIS_ADDRS")
	if addr == "" {
		fmt.Fprintln(os.Stderr, "sublock: LOCKCHECK_REDIS_ADDRS is not set (run me with lockcheck run --lock-cmd)")
		os.Exit(2)
	}
	if t := os.Getenv("LOCKCHECK_TOPOLOGY"); t != "" && t != "single" {
		fmt.Fprintf(os.Stderr, "sublock: topology %s: a subscription lives on one node and does not move to a promoted replica; run me on topology single (--lock-topology single)\n", t)
		os.Exit(2)
	}
	unwatched := flag.Bool("unwatched", false, "the classic mistake: never tell lockcheck a lease is lost when its subscription's connection fails")
	flag.Parse()
	timeo := 2 * time.Second
	if ms, err := strconv.Atoi(os.Getenv("LOCKCHECK_OP_TIMEOUT_MS")); err == nil && ms > 0 {
		timeo = time.Duration(ms) * time.Millisecond
	}
	opts := redis.Options{Addr: addr, Password: os.Getenv("LOCKCHECK_REDIS_PASSWORD"), MaxRetries: -1, ReadTimeout: timeo, WriteTimeout: timeo, DialTimeout: timeo}
	p := &proc{c: redis.NewClient(&opts), opts: opts, out: bufio.NewWriter(os.Stdout), held: map[string]*lease{}, timeo: timeo, unwatched: *unwatched}
	defer p.c.Close()
	var wg sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "sublock: bad request %q: %v\n", in.Text(), err)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.write(p.handle(req))
		}()
	}
	wg.Wait()
	p.mu.Lock()
	for _, l := range p.held {
		l.close()
	}
	p.mu.Unlock()
}

func (p *proc) handle(req request) reply {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeo)
	defer cancel()
	switch req.Op {
	case "ping":
		err := p.c.Ping(ctx).Err()
		return answer(reply{ID: req.ID, OK: err == nil, Scope: scope}, err)
	case "acquire":
		token, ok, err := p.acquire(ctx, req.Key)
		return answer(reply{ID: req.ID, OK: ok, Token: token}, err)
	case "release":
		p.mu.Lock()
		l := p.held[req.Token]
		delete(p.held, req.Token)
		if l != nil {
			l.released = true
		}
		p.mu.Unlock()
		if l == nil {
			return reply{ID: req.ID}
		}
		l.close()
		return reply{ID: req.ID, OK: true}
	}
	return answer(reply{ID: req.ID}, fmt.Errorf("unknown op %q (sublock has no extend: verify --lock-no-extend)", req.Op))
}

// answer is r, indeterminate if err says the outcome is unknown.
func answer(r reply, err error) reply {
	if err != nil {
		r.OK, r.Token, r.Error = false, "", err.Error()
	}
	return r
}

// acquire subscribes to key's channel on a connection of its own and
// holds the lock if it is the channel's only subscriber. A failure
// before the count is known closes the connection: the subscription goes
// with it, and the outcome is unknown only if the close might not have.
func (p *proc) acquire(ctx context.Context, key string) (string, bool, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	l := &lease{}
	opts := p.opts
	opts.Dialer = dialOnce()
	opts.PoolSize = 1
	l.sc = redis.NewClient(&opts)
	l.ps = l.sc.Subscribe(ctx, key)
	if _, err := l.ps.ReceiveTimeout(ctx, p.timeo); err != nil {
		l.close()
		return "", false, err
	}
	n, err := p.c.PubSubNumSub(ctx, key).Result()
	if err != nil || n[key] != 1 {
		l.close()
		return "", false, err
	}
	p.mu.Lock()
	p.held[token] = l
	p.mu.Unlock()
	go p.watch(key, token, l)
	return token, true, nil
}

// watch reads l's subscription until it fails: a lease not released by
// then is lost, and lockcheck is told.
func (p *proc) watch(key, token string, l *lease) {
	for {
		if _, err := l.ps.Receive(context.Background()); err != nil {
			break
		}
	}
	p.mu.Lock()
	lost := !l.released && !p.unwatched
	delete(p.held, token)
	p.mu.Unlock()
	l.close()
	if lost {
		p.write(event{Event: "lost", Key: key, Token: token})
	}
}

func (l *lease) close() {
	_ = l.ps.Close()
	_ = l.sc.Close()
}

// dialOnce is a dialer that connects once: a second dial (go-redis's
// PubSub reconnecting after a failure) fails.
func dialOnce() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var once sync.Once
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		err := errors.New("sublock: a subscription's connection is dialled once: the lease it held is lost")
		once.Do(func() { err = nil })
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// write writes one line (a reply or an event) to stdout.
func (p *proc) write(v any) {
	b, _ := json.Marshal(v)
	p.mu.Lock()
	p.out.Write(append(b, '\n'))
	p.out.Flush()
	p.mu.Unlock()
}
