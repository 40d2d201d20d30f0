package harness

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// AgentConfig is one agent: clients on this machine that a coordinator
// (Config.Agents) drives and judges with those of other machines.
type AgentConfig struct {
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

// agentPlan is what the coordinator gives an agent: its share of the
// clients and everything they need.
type agentPlan struct {
	Index    int             `json:"index"`
	Lock     string          `json:"lock"`
	Workload workload.Config `json:"workload"`
	Access   access          `json:"access"`
	// Base is the run's process id of the agent's client 0; Total the
	// run's clients: local id l is the run's l/n*Total + Base + l%n,
	// which a crashed client's successor (l + n) keeps unique.
	Base  int `json:"base"`
	Total int `json:"total"`
	// Epoch is the coordinator's clock zero (Unix ns): the agent's clock
	// reads from it, so that clocks that agree need no correction.
	Epoch   int64 `json:"epoch"`
	Crashes bool  `json:"crashes,omitempty"`
	// Gen counts the agent's rejoins: each has process ids of its own.
	Gen int `json:"gen,omitempty"`
}

// genStride is how many generations of a client slot (a crashed
// client's successors) one agent generation's process ids leave room for.
const genStride = 1000

// process maps a local client id to the run's.
func (p *agentPlan) process(id int) int {
	n := p.Workload.Clients
	if id < 0 || n == 0 {
		return id
	}
	return (id/n+p.Gen*genStride)*p.Total + p.Base + id%n
}

// ErrRefused marks an agent the coordinator turned away.
var ErrRefused = errors.New("refused by the coordinator")

// RunAgent joins a coordinator, plays its share of the clients when told
// to start, streams every op back, and returns when the coordinator ends
// the run (or the connection is lost: the clients stop at once, since
// what they did after could not reach the history).
func RunAgent(ctx context.Context, cfg AgentConfig) error {
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
func joinCoordinator(ctx context.Context, cfg AgentConfig) (*agent.Conn, *agentPlan, error) {
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
		return nil, nil, configErr(fmt.Errorf("join %s: %w: start lockcheck run --agents N --listen ADDR there first, or check --join", cfg.Join, err))
	}
	conn := agent.NewConn(c)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.Send(agent.Msg{T: agent.THello, Version: Version, Token: cfg.Token, Index: cfg.Index}); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: %w", cfg.Join, err)
	}
	m, err := conn.Recv()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: no welcome: %w", cfg.Join, err)
	}
	if m.T == agent.TRefuse {
		conn.Close()
		return nil, nil, configErr(fmt.Errorf("join %s: %w: %s", cfg.Join, ErrRefused, m.Error))
	}
	var plan agentPlan
	if m.T != agent.TWelcome || json.Unmarshal(m.Plan, &plan) != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("join %s: not a lockcheck coordinator (got %q)", cfg.Join, m.T)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, &plan, nil
}

// agentRun is an agent between its welcome and its end.
type agentRun struct {
	conn    *agent.Conn
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
	queue []agent.Op
	// smu is held while a batch is taken and sent, so batches go out in
	// the order they were taken; sendErr is the first send that failed.
	smu     sync.Mutex
	sendErr error
}

func newAgentRun(conn *agent.Conn, plan *agentPlan, cfg AgentConfig) *agentRun {
	base := time.Now()
	delta := base.UnixNano() - plan.Epoch
	now := func() int64 { return delta + int64(time.Since(base)) }
	if cfg.Skew != 0 || cfg.Drift != 0 {
		now = agent.Skewed{Base: now, Skew: cfg.Skew, Drift: cfg.Drift}.Now
	}
	return &agentRun{conn: conn, plan: plan, now: now, started: make(chan struct{}), mapAddr: cfg.DialAddr, process: cfg.Process}
}

// send queues an op for the coordinator, under the run's process ids.
func (a *agentRun) send(op agent.Op) {
	op.Process = a.plan.process(op.Process)
	a.qmu.Lock()
	a.queue = append(a.queue, op)
	a.qmu.Unlock()
}

func (a *agentRun) record(op history.Op) { a.send(agent.Op{Op: op}) }

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
	if err := a.conn.Send(agent.Msg{T: agent.TOps, Ops: batch}); err != nil {
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
	entry, err := lockimpl.Builtin().Lookup(plan.Lock)
	if err != nil {
		return configErr(err)
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.stop = stop
	a.runner = workload.New(plan.Workload, a.now, a.record)
	a.runner.UseResource(&remoteResource{conn: a.conn, now: a.now, send: a.send, timeout: plan.Workload.OpTimeout + 5*time.Second})
	env := plan.Access.env(plan.Workload, a.now, a.record)
	env.DialAddr = a.clientAddr
	if err := a.reach(plan.Access); err != nil {
		_ = a.conn.Send(agent.Msg{T: agent.TFail, Error: err.Error()})
		return configErr(fmt.Errorf("agent %d: %w", plan.Index, err))
	}
	defer a.closeProxies()
	if err := a.startProxies(plan.Access); err != nil {
		_ = a.conn.Send(agent.Msg{T: agent.TFail, Error: err.Error()})
		return fmt.Errorf("agent %d: %w", plan.Index, err)
	}
	locker, err := buildLock(entry.Factory, entry.Name, env, a.runner, plan.Workload, plan.Crashes, func(l lockimpl.Locker) lockimpl.Locker {
		return &announcer{Locker: l, run: a}
	})
	if err != nil {
		_ = a.conn.Send(agent.Msg{T: agent.TFail, Error: err.Error()})
		return err
	}
	if err := a.conn.Send(agent.Msg{T: agent.TReady}); err != nil {
		closeLocker(locker)
		return fmt.Errorf("agent %d: %w: %w", plan.Index, agent.ErrLost, err)
	}
	readDone := make(chan error, 1)
	go func() { readDone <- a.read() }()
	flushDone := make(chan struct{})
	go a.flushLoop(ctx, flushDone)
	select {
	case <-a.started:
	case <-ctx.Done():
		closeLocker(locker)
		return fmt.Errorf("agent %d: before the start: %w", plan.Index, context.Cause(ctx))
	}
	runErr := a.runner.Run(ctx, locker)
	closeLocker(locker) // its last records (a watchdog's) go out below
	stop(nil)
	<-flushDone
	if err := a.flush(); err != nil {
		return fmt.Errorf("agent %d: %w: %w", plan.Index, agent.ErrLost, err)
	}
	counts, _ := json.Marshal(a.runner.Counters().Snapshot())
	if err := a.conn.Send(agent.Msg{T: agent.TDone, Counts: counts, Error: errString(runErr)}); err != nil {
		return fmt.Errorf("agent %d: %w: %w", plan.Index, agent.ErrLost, err)
	}
	// The coordinator measures the clock once more, then closes.
	select {
	case <-readDone:
	case <-time.After(time.Minute):
	}
	return runErr
}

// reach checks that every Redis address answers a TCP dial from here,
// so that an agent that cannot reach Redis says so before the start
// rather than recording a run of ops that were never sent.
func (a *agentRun) reach(acc access) error {
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
func (a *agentRun) startProxies(acc access) error {
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
func (a *agentRun) toxic(f *agent.Fault) error {
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
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.flush(); err != nil {
				a.stop(fmt.Errorf("%w: %w", agent.ErrLost, err))
				return
			}
		}
	}
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
			a.stop(fmt.Errorf("%w: %w", agent.ErrLost, err))
			return err
		}
		switch m.T {
		case agent.TPing:
			_ = a.conn.Send(agent.Msg{T: agent.TPong, ID: m.ID, Sent: m.Sent, Agent: a.now()})
		case agent.TStart:
			start()
		case agent.TStop:
			a.stop(nil)
		case agent.TDie:
			if a.process {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			a.conn.Close() // as abrupt as a goroutine can be
			a.stop(errors.New("killed (kill-agent)"))
		case agent.TFault:
			reply := agent.Msg{T: agent.TReply, ID: m.ID}
			if m.Fault != nil && m.Fault.Kind == "toxic" {
				reply.Error = errString(a.toxic(m.Fault))
			} else {
				reply.IDs = a.fault(m.Fault)
			}
			_ = a.conn.Send(reply)
		case agent.TReply:
			a.conn.Deliver(m)
		}
	}
}

// fault plays a client fault on this agent's clients and returns their
// run ids.
func (a *agentRun) fault(f *agent.Fault) []int {
	if f == nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	var ids []int
	switch f.Kind {
	case "pause":
		ids = a.runner.PauseClients(rng, f.N, f.D, f.InSection)
	case "crash":
		ids = a.runner.CrashClients(rng, f.N)
	case "cut":
		ids = a.runner.CutClients(rng, f.N)
	case "skew":
		ids = a.runner.SkewClients(rng, f.N, f.Rate, f.Jump)
	case "heal":
		a.runner.HealClients()
	}
	for i, id := range ids {
		ids[i] = a.plan.process(id)
	}
	return ids
}

// announcer tells the coordinator of each lock op before it is sent to
// Redis, on the wire at once behind every op recorded before it (flush):
// if this agent dies, the ops it had in flight are known and written as
// indeterminate (they may have taken effect) rather than missing. An op
// that cannot be announced is not sent.
type announcer struct {
	lockimpl.Locker
	run *agentRun
}

func (a *announcer) announce(ctx context.Context, f history.Func, key, token string, ttl time.Duration) error {
	a.run.send(agent.Op{Begin: true, Op: history.Op{Process: lockimpl.ClientFrom(ctx), F: f, Type: history.Info, Key: key,
		Token: token, TTLms: ttl.Milliseconds(), Call: a.run.now()}})
	if err := a.run.flush(); err != nil {
		return fmt.Errorf("%w: %w: %w", lockimpl.ErrNotSent, agent.ErrLost, err)
	}
	return nil
}

func (a *announcer) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	if err := a.announce(ctx, history.Acquire, key, "", ttl); err != nil {
		return lockimpl.Lease{}, err
	}
	return a.Locker.Acquire(ctx, key, ttl)
}

func (a *announcer) Release(ctx context.Context, l lockimpl.Lease) error {
	if err := a.announce(ctx, history.Release, l.Key, l.Token, 0); err != nil {
		return err
	}
	return a.Locker.Release(ctx, l)
}

func (a *announcer) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	if err := a.announce(ctx, history.Extend, l.Key, l.Token, ttl); err != nil {
		return lockimpl.Lease{}, err
	}
	return a.Locker.Extend(ctx, l, ttl)
}

// Close closes the lock.
func (a *announcer) Close() error {
	closeLocker(a.Locker)
	return nil
}

// ExtendAdds passes the lock's extend mode through.
func (a *announcer) ExtendAdds() bool { return lockimpl.ExtendAdds(a.Locker) }

// remoteResource is the protected resource of an agent's clients: the
// coordinator's, for fenced leases, so that a stale token is rejected
// whichever machine wrote the higher one. Unfenced writes need no
// admission: their overlaps are judged from the history.
type remoteResource struct {
	conn    *agent.Conn
	now     func() int64
	send    func(agent.Op)
	timeout time.Duration
}

// Enter asks the coordinator to let a fenced section in. Its entry time
// is the coordinator's (a section marked so carries it); a section the
// coordinator could not be asked about is rejected on the agent's clock.
func (r *remoteResource) Enter(l lockimpl.Lease) (int64, *workload.Section, bool) {
	if l.Fence == 0 {
		return r.now(), nil, true
	}
	m, err := r.conn.Call(agent.Msg{T: agent.TEnter, Key: l.Key, Fence: l.Fence}, r.timeout)
	if err != nil {
		return r.now(), nil, false
	}
	return m.At, &workload.Section{ID: m.Section}, m.OK
}

// Exit sends the write op; a fenced section's entry (and its cut, if a
// higher token overtook it) are on the coordinator's clock.
func (r *remoteResource) Exit(op history.Op, l lockimpl.Lease, s *workload.Section, accepted bool) {
	op = workload.WriteOp(op, l, accepted)
	w := agent.Op{Op: op, CallRef: s != nil, ReturnRef: s != nil && !accepted}
	if s != nil && accepted {
		m, err := r.conn.Call(agent.Msg{T: agent.TLeave, Key: l.Key, Section: s.ID, Call: op.Call, Exit: op.Return}, r.timeout)
		if err == nil && m.OK {
			w.Return, w.ReturnRef, w.CutShort = m.At, true, true
		}
	}
	r.send(w)
}
