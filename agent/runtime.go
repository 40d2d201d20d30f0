package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/version"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// Config is one agent: clients on this machine that a coordinator
// (Config.Agents) drives and judges with those of other machines.
type Config struct {
	// Join is the coordinator's HOST:PORT.
	Join string
	// Token is the shared secret (LOCKCHECK_AGENT_TOKEN).
	Token string
	// TLS, if set, dials the coordinator over TLS.
	TLS *tls.Config
	// Index is the agent's index in the run (a Kubernetes Indexed Job's
	// JOB_COMPLETION_INDEX), or -1: the first free one.
	Index int
	// JoinTimeout bounds the wait for the coordinator to answer (0: a
	// minute): an agent may start before it listens.
	JoinTimeout time.Duration
	// Skew and Drift (ppm) run the agent's clock source off on purpose,
	// as a machine whose clock is wrong: what the coordinator's clock
	// measurement must find (LOCKCHECK_AGENT_SKEW, LOCKCHECK_AGENT_DRIFT).
	Skew  time.Duration
	Drift int64
	// Process says the agent is a process of its own, which kill-agent
	// may SIGKILL; an agent in a goroutine (a test's) drops its
	// connection and stops instead.
	Process bool
	// DialAddr, if set, maps a Redis address the coordinator gives to the
	// one this agent dials (a NAT, a published port): --redis-addr-map.
	DialAddr func(addr string) string
	// Log receives a line when the agent joins and when it ends.
	Log io.Writer
}

// ErrRefused marks an agent the coordinator turned away.
var ErrRefused = errors.New("refused by the coordinator")

// Run joins a coordinator, plays its share of the clients when told
// to start, streams every op back, and returns when the coordinator ends
// the run (or the connection is lost: the clients stop at once, since
// what they did after could not reach the history).
func Run(ctx context.Context, cfg Config) error {
	conn, plan, err := joinCoordinator(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	a := newAgentRun(conn, plan, cfg)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "agent %d: joined %s: clients %d to %d of %d, lock %s\n", plan.Index, cfg.Join, plan.Base, plan.Base+plan.Workload.Clients-1, plan.Total, plan.Lock)
	}
	return a.run(ctx)
}

// joinCoordinator dials until the coordinator answers (within the join
// timeout), says hello and reads its welcome.
func joinCoordinator(ctx context.Context, cfg Config) (*Conn, *agentPlan, error) {
	timeout := cfg.JoinTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	var c net.Conn
	var err error
	for {
		d := net.Dialer{Timeout: 5 * time.Second}
		if cfg.TLS != nil {
			c, err = (&tls.Dialer{NetDialer: &d, Config: cfg.TLS}).DialContext(ctx, "tcp", cfg.Join)
		} else {
			c, err = d.DialContext(ctx, "tcp", cfg.Join)
		}
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return nil, nil, workload.ConfigErr(fmt.Errorf("join %s: %w: start lockcheck run --agents N --listen ADDR there first, or check --join", cfg.Join, err))
	}
	conn := NewConn(c)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.Send(Msg{T: THello, Version: version.Version, Token: cfg.Token, Index: cfg.Index}); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: %w", cfg.Join, err)
	}
	m, err := conn.Recv()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: no welcome: %w", cfg.Join, err)
	}
	if m.T == TRefuse {
		conn.Close()
		return nil, nil, workload.ConfigErr(fmt.Errorf("join %s: %w: %s", cfg.Join, ErrRefused, m.Error))
	}
	var plan agentPlan
	if m.T != TWelcome || json.Unmarshal(m.Plan, &plan) != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: not a lockcheck coordinator (got %q)", cfg.Join, m.T)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, &plan, nil
}

// agentRun is an agent between its welcome and its end.
type agentRun struct {
	conn    *Conn
	plan    *agentPlan
	now     func() int64
	runner  *workload.Runner
	started chan struct{}
	stop    context.CancelCauseFunc
	mapAddr func(string) string
	process bool
	// proxies are the agent's own client proxies, by node address
	// (Access.Proxies): the faults through client proxies play on them.
	proxies map[string]*cluster.Proxy

	qmu   sync.Mutex
	queue []Op
	// smu is held while a batch is taken and sent, so batches go out in
	// the order they were taken; sendErr is the first send that failed.
	smu     sync.Mutex
	sendErr error
}

func newAgentRun(conn *Conn, plan *agentPlan, cfg Config) *agentRun {
	base := time.Now()
	delta := base.UnixNano() - plan.Epoch
	now := func() int64 { return delta + int64(time.Since(base)) }
	if cfg.Skew != 0 || cfg.Drift != 0 {
		now = Skewed{Base: now, Skew: cfg.Skew, Drift: cfg.Drift}.Now
	}
	return &agentRun{conn: conn, plan: plan, now: now, started: make(chan struct{}), mapAddr: cfg.DialAddr, process: cfg.Process}
}

// send queues an op for the coordinator, under the run's process ids.
func (a *agentRun) send(op Op) {
	op.Process = a.plan.process(op.Process)
	a.qmu.Lock()
	a.queue = append(a.queue, op)
	a.qmu.Unlock()
}

func (a *agentRun) record(op history.Op) { a.send(Op{Op: op}) }

// flush sends what is queued, in order: once it returns nil, every op
// queued before it was called is on the wire, behind every op queued
// before that. An announce (below) is queued and flushed, so whatever
// the coordinator holds of this agent when it dies is a prefix of what
// its clients recorded, plus the begins of the ops they had in flight:
// a release announced under a lease's token arrives after that lease's
// acquire, never alone (an acquire lost with the agent is written as
// indeterminate under a token no one knows, and a release under the
// real token would then free nothing: a key held on paper that another
// client acquired, a violation that never happened).
func (a *agentRun) flush() error {
	a.smu.Lock()
	defer a.smu.Unlock()
	if a.sendErr != nil {
		return a.sendErr
	}
	a.qmu.Lock()
	batch := a.queue
	a.queue = nil
	a.qmu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := a.conn.Send(Msg{T: TOps, Ops: batch}); err != nil {
		a.sendErr = err
		return err
	}
	return nil
}

// flushEvery is how often an agent streams its ops: what a host that
// dies takes with it.
const flushEvery = 20 * time.Millisecond

func (a *agentRun) run(ctx context.Context) error {
	plan := a.plan
	entry, err := lockimpl.All().Lookup(plan.Lock)
	if err != nil {
		return workload.ConfigErr(err)
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.stop = stop
	defer a.closeProxies()
	locker, told, err := a.build(entry)
	if err != nil {
		_ = a.conn.Send(Msg{T: TFail, Error: told})
		return err
	}
	if err := a.conn.Send(Msg{T: TReady}); err != nil {
		lockimpl.Close(locker)
		return fmt.Errorf("agent %d: %w: %w", plan.Index, ErrLost, err)
	}
	readDone := make(chan error, 1)
	go func() { readDone <- a.read() }()
	flushDone := make(chan struct{})
	go a.flushLoop(ctx, flushDone)
	select {
	case <-a.started:
	case <-ctx.Done():
		lockimpl.Close(locker)
		return fmt.Errorf("agent %d: before the start: %w", plan.Index, context.Cause(ctx))
	}
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		a.heartbeat(ctx, Silence)
	}()
	runErr := a.runner.Run(ctx, locker)
	lockimpl.Close(locker) // its last records (a watchdog's) go out below
	stop(nil)
	<-hbDone
	<-flushDone
	if err := a.flush(); err != nil {
		return fmt.Errorf("agent %d: %w: %w", plan.Index, ErrLost, err)
	}
	counts, _ := json.Marshal(a.runner.Counters().Snapshot())
	if err := a.conn.Send(Msg{T: TDone, Counts: counts, Error: errString(runErr)}); err != nil {
		return fmt.Errorf("agent %d: %w: %w", plan.Index, ErrLost, err)
	}
	// The coordinator measures the clock once more, then closes.
	select {
	case <-readDone:
	case <-time.After(time.Minute):
	}
	return runErr
}

// build makes the agent's clients and their lock: Redis reached from
// here, the agent's own client proxies started if the run's faults act
// through them, every op announced to the coordinator before it is sent.
func (a *agentRun) build(entry lockimpl.Entry) (locker lockimpl.Locker, told string, err error) {
	plan := a.plan
	a.runner = workload.New(plan.Workload, a.now, a.record)
	a.runner.UseResource(&remoteResource{conn: a.conn, now: a.now, send: a.send, timeout: plan.Workload.OpTimeout + 5*time.Second})
	env := plan.Access.Env(plan.Workload, a.now, a.record)
	env.DialAddr = a.clientAddr
	env.Announced = slices.Sorted(maps.Keys(a.plan.Access.Aliases))
	// The coordinator is told what went wrong (told); this agent's own
	// error says which agent it was, and whether it is the user's to fix.
	if err := a.reach(plan.Access); err != nil {
		return nil, err.Error(), workload.ConfigErr(fmt.Errorf("agent %d: %w", plan.Index, err))
	}
	if err := a.startProxies(plan.Access); err != nil {
		return nil, err.Error(), fmt.Errorf("agent %d: %w", plan.Index, err)
	}
	locker, err = workload.BuildLock(entry.Factory, entry.Name, env, a.runner, plan.Workload, plan.Crashes, func(l lockimpl.Locker) lockimpl.Locker {
		return &announcer{Locker: l, run: a}
	})
	if err != nil {
		return nil, err.Error(), err
	}
	return locker, "", nil
}

// heartbeat stops the run once the coordinator has been silent for
// silence (it pings every PingEvery): a half-open connection, on which
// sends may still succeed for a while, must not leave clients locking
// with no one recording their ops.
func (a *agentRun) heartbeat(ctx context.Context, silence time.Duration) {
	every(ctx, PingEvery, func() bool {
		s := a.conn.Silent()
		if s <= silence {
			return false
		}
		a.stop(fmt.Errorf("%w: nothing from the coordinator for %v", ErrLost, s.Round(time.Millisecond)))
		a.conn.Close()
		return true
	})
}

// every calls fn every d until ctx ends or fn says it is done.
func every(ctx context.Context, d time.Duration, fn func() (done bool)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if fn() {
				return
			}
		}
	}
}

// reach checks that every Redis address answers a TCP dial from here,
// so that an agent that cannot reach Redis says so before the start
// rather than recording a run of ops that were never sent.
func (a *agentRun) reach(acc Access) error {
	for _, addr := range append(slices.Clone(acc.Addrs), acc.Sentinels...) {
		to := a.dialAddr(addr)
		c, err := net.DialTimeout("tcp", to, 5*time.Second)
		if err != nil {
			return fmt.Errorf("cannot reach Redis at %s from this agent (%w): run the agent where it can, or map the address with --redis-addr-map %s=HOST:PORT", to, err, addr)
		}
		c.Close()
	}
	return nil
}

func (a *agentRun) dialAddr(addr string) string {
	if a.mapAddr != nil {
		return a.mapAddr(addr)
	}
	return addr
}

// clientAddr is where this agent's clients dial for addr: the node an
// announced address means, through the agent's proxy for it if it has
// one.
func (a *agentRun) clientAddr(addr string) string {
	if n, ok := a.plan.Access.Aliases[addr]; ok {
		addr = n
	}
	if p := a.proxies[addr]; p != nil {
		return p.Addr
	}
	return a.dialAddr(addr)
}

// startProxies puts a proxy of the agent's own in front of every node,
// if the run's faults act through client proxies.
func (a *agentRun) startProxies(acc Access) error {
	if !acc.Proxies {
		return nil
	}
	a.proxies = map[string]*cluster.Proxy{}
	for i, addr := range acc.Addrs {
		p, err := cluster.NewProxy(fmt.Sprintf("agent%d-client-%d", a.plan.Index, i), a.dialAddr(addr))
		if err != nil {
			return err
		}
		a.proxies[addr] = p
	}
	return nil
}

func (a *agentRun) closeProxies() {
	for _, p := range a.proxies {
		p.Close()
	}
}

// toxic mirrors a toxic the coordinator put on its proxy for a node onto
// this agent's proxy for the node.
func (a *agentRun) toxic(f *Fault) error {
	p := a.proxies[f.Node]
	if p == nil {
		return fmt.Errorf("no proxy for node %s", f.Node)
	}
	var t cluster.Toxic
	if err := json.Unmarshal(f.Toxic, &t); err != nil {
		return err
	}
	return p.Apply(t)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *agentRun) flushLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	every(ctx, flushEvery, func() bool {
		if err := a.flush(); err != nil {
			a.stop(fmt.Errorf("%w: %w", ErrLost, err))
			return true
		}
		return false
	})
}

// read serves the coordinator's messages until the connection ends; a
// connection lost before the end stops the clients.
func (a *agentRun) read() error {
	var once sync.Once
	start := func() { once.Do(func() { close(a.started) }) }
	for {
		m, err := a.conn.Recv()
		if err != nil {
			a.conn.Failed(err)
			a.stop(fmt.Errorf("%w: %w", ErrLost, err))
			return err
		}
		switch m.T {
		case TPing:
			_ = a.conn.Send(Msg{T: TPong, ID: m.ID, Sent: m.Sent, Agent: a.now()})
		case TStart:
			start()
		case TStop:
			a.stop(nil)
		case TDie:
			if a.process {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			a.conn.Close() // as abrupt as a goroutine can be
			a.stop(errors.New("killed (kill-agent)"))
		case TFault:
			reply := Msg{T: TReply, ID: m.ID}
			var err error
			if m.Fault != nil && m.Fault.Kind == FaultTally {
				reply.Counts, err = json.Marshal(a.runner.Tally(m.Fault.Tally))
			} else {
				reply.IDs, err = a.fault(m.Fault)
			}
			reply.Error = errString(err)
			_ = a.conn.Send(reply)
		case TReply:
			a.conn.Deliver(m)
		}
	}
}

// fault plays what the coordinator asked (Fault) on this agent's clients
// and returns their run ids; a kind it does not know is refused.
func (a *agentRun) fault(f *Fault) ([]int, error) {
	if f == nil {
		return nil, errors.New("a fault message without its fault")
	}
	switch f.Kind {
	case FaultToxic:
		return nil, a.toxic(f)
	case FaultHeal:
		a.runner.HealClients()
		return nil, nil
	case FaultClient:
		if f.Client == nil {
			return nil, errors.New("a client fault without its value")
		}
	default:
		return nil, fmt.Errorf("fault kind %q: this agent plays %s, %s and %s, and tallies (%s) (is it older than the coordinator?)", f.Kind, FaultClient, FaultHeal, FaultToxic, FaultTally)
	}
	rng := rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	ids, err := a.runner.Play(rng, *f.Client)
	for i, id := range ids {
		ids[i] = a.plan.process(id)
	}
	return ids, err
}
