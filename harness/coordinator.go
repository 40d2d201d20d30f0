package harness

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// DefaultJoinTimeout is how long a coordinator waits for its agents.
const DefaultJoinTimeout = time.Minute

// coordinator plays a run's clients through agents on other machines
// (Config.Agents): it welcomes them, measures their clocks, starts them,
// and turns what they stream into the run's one history, each op on its
// clock within a bound (clock_bound).
type coordinator struct {
	r      *run
	ln     net.Listener
	n      int
	fences *workload.Fences

	mu       sync.Mutex
	agents   []*remoteAgent
	started  bool
	closed   bool
	sections map[int64]*workload.Section
	wg       sync.WaitGroup // the accept loop and each agent's reader
	spawned  *spawned
	// startedAt is when the clients started; stopping is set once the
	// run ends (no agent rejoins then); past are agents lost and
	// replaced by a rejoin; reviving the indexes kill-agent killed and
	// the next revive brings back.
	startedAt int64
	stopping  bool
	past      []*remoteAgent
	reviving  []int
}

// remoteAgent is the coordinator's view of one agent.
type remoteAgent struct {
	index int
	// gen counts the agent's rejoins (kill-agent): its clients' process
	// ids are new in each, and one above 0 starts late.
	gen   int
	plan  agentPlan
	conn  *agent.Conn
	addr  string
	clock *agent.Clock
	// ready is closed when the agent said it is ready, or failed (why).
	ready     chan struct{}
	readyOnce sync.Once
	failed    string
	// done is closed when the agent said done or was lost.
	done     chan struct{}
	doneOnce sync.Once
	lost     string // why and when, if it was lost
	counts   history.Unrecorded
	runErr   string
	received atomic.Int64
	maxBound atomic.Int64

	pmu     sync.Mutex
	pending map[int][]history.Op // ops announced and not yet completed, by process
}

// The coordinator is the players of a run on agents (harness.go).
func (c *coordinator) clients() nemesis.Clients    { return remoteClients{c} }
func (c *coordinator) agentFaults() nemesis.Agents { return c }
func (c *coordinator) finish() {
	c.end()
	c.r.res.Agents, c.r.res.AgentsLost = c.runInfo(), c.lostAgents()
}

// listenAgents opens the coordinator's port and starts welcoming agents.
func (r *run) listenAgents() (*coordinator, error) {
	addr := cmp.Or(r.cfg.Listen, "127.0.0.1:0")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, configErr(fmt.Errorf("--listen %s: %w: is another coordinator on that port? choose another with --listen", addr, err))
	}
	if r.cfg.AgentTLS != nil {
		ln = tls.NewListener(ln, r.cfg.AgentTLS)
	}
	c := &coordinator{r: r, ln: ln, n: r.cfg.Agents, fences: workload.NewFences(r.clock.Now), sections: map[int64]*workload.Section{}}
	c.mirrorToxics()
	if r.cfg.Listening != nil {
		r.cfg.Listening(ln.Addr().String())
	}
	c.wg.Add(1)
	go c.accept()
	if r.cfg.SpawnAgents != "" {
		if c.spawned, err = spawnAgents(r.cfg.SpawnAgents, ln.Addr().String(), r.cfg.AgentToken, r.res.Dir, c.n); err != nil {
			c.end()
			return nil, err
		}
	}
	return c, nil
}

func (c *coordinator) logf(format string, args ...any) {
	if w := c.r.cfg.Progress; w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func (c *coordinator) accept() {
	defer c.wg.Done()
	for {
		nc, err := c.ln.Accept()
		if err != nil {
			return // closed
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.welcome(agent.NewConn(nc))
		}()
	}
}

// welcome checks an agent's hello and gives it its share of the clients,
// or refuses it with one line on both sides.
func (c *coordinator) welcome(conn *agent.Conn) {
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	m, err := conn.Recv()
	if err != nil || m.T != agent.THello {
		c.logf("coordinator: refused %s: no hello (%v)", conn.RemoteAddr(), err)
		conn.Close()
		return
	}
	ra, why := c.admit(conn, m)
	if why != "" {
		c.logf("coordinator: refused agent at %s: %s", conn.RemoteAddr(), why)
		_ = conn.Send(agent.Msg{T: agent.TRefuse, Error: why})
		conn.Close()
		return
	}
	plan, _ := json.Marshal(ra.plan)
	if err := conn.Send(agent.Msg{T: agent.TWelcome, Index: ra.index, Plan: plan}); err != nil {
		c.lose(ra, err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	c.logf("coordinator: agent %d joined from %s (clients %d to %d)", ra.index, ra.addr, ra.plan.Base, ra.plan.Base+ra.plan.Workload.Clients-1)
	c.read(ra)
}

// admit checks a hello and, if it passes, makes the agent's plan.
func (c *coordinator) admit(conn *agent.Conn, m agent.Msg) (*remoteAgent, string) {
	if !agent.TokenMatches(m.Token, c.r.cfg.AgentToken) {
		return nil, "wrong agent token: give both sides the same LOCKCHECK_AGENT_TOKEN"
	}
	if m.Version != Version {
		return nil, fmt.Sprintf("agent is lockcheck %s, the coordinator %s: run the same version on both", m.Version, Version)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.agents == nil {
		c.agents = make([]*remoteAgent, c.n)
	}
	i := m.Index
	if i < 0 {
		i = slices.Index(c.agents, nil)
	}
	if c.started && !c.closed && !c.stopping && i >= 0 && i < c.n {
		return c.rejoin(conn, i)
	}
	switch {
	case c.started || c.closed:
		return nil, "the run has started: an agent joins before the start"
	case i < 0:
		return nil, fmt.Sprintf("the run has its %d agents already", c.n)
	case i >= c.n:
		return nil, fmt.Sprintf("agent index %d: the run has agents 0 to %d", i, c.n-1)
	case c.agents[i] != nil:
		return nil, fmt.Sprintf("agent %d has joined already", i)
	}
	ra := c.newAgent(conn, i, 0)
	c.agents[i] = ra
	return ra, ""
}

// newAgent is agent i, generation gen, on conn, with its plan.
func (c *coordinator) newAgent(conn *agent.Conn, i, gen int) *remoteAgent {
	ra := &remoteAgent{index: i, gen: gen, conn: conn, addr: conn.RemoteAddr(), clock: &agent.Clock{Off: c.r.cfg.NoClockCorrection},
		done: make(chan struct{}), ready: make(chan struct{}), pending: map[int][]history.Op{}, plan: c.planFor(i)}
	ra.plan.Gen = gen
	return ra
}

// rejoin admits agent i back after it was lost (kill-agent brought it
// back, or its host did): its clients play the rest of the run under new
// process ids. c.mu is held.
func (c *coordinator) rejoin(conn *agent.Conn, i int) (*remoteAgent, string) {
	old := c.agents[i]
	lost := false
	if old != nil {
		select {
		case <-old.done:
			lost = old.lost != ""
		default:
		}
	}
	if !lost {
		return nil, "the run has started: an agent joins before the start (or rejoins after it was lost)"
	}
	w := c.r.workload
	left := w.Duration - time.Duration(c.r.clock.Now()-c.startedAt)
	if w.Duration > 0 && left < 100*time.Millisecond {
		return nil, "the run is ending"
	}
	ra := c.newAgent(conn, i, old.gen+1)
	if w.Duration > 0 {
		ra.plan.Workload.Duration = left
	}
	c.past = append(c.past, old)
	c.agents[i] = ra
	c.reviving = slices.DeleteFunc(c.reviving, func(j int) bool { return j == i })
	return ra, ""
}

// startLate starts an agent that rejoined mid-run, once its clock is
// measured.
func (c *coordinator) startLate(ra *remoteAgent) {
	for range 4 {
		_ = ra.conn.Send(agent.Msg{T: agent.TPing, Sent: c.r.clock.Now()})
		time.Sleep(5 * time.Millisecond)
	}
	_ = ra.conn.Send(agent.Msg{T: agent.TStart})
	c.logf("coordinator: agent %d rejoined at %s (generation %d)", ra.index, history.Seconds(c.r.clock.Now()), ra.gen)
}

// KillAgents kills the agents targets names (one, minority, all), chosen
// by rng: a spawned one by SIGKILL of its process, any other by asking it
// to SIGKILL itself.
func (c *coordinator) KillAgents(rng *rand.Rand, targets string) []string {
	c.mu.Lock()
	stopping := c.stopping
	c.mu.Unlock()
	if stopping {
		return nil
	}
	// The agents still playing: not done, not lost.
	live := slices.DeleteFunc(c.joined(), func(ra *remoteAgent) bool {
		select {
		case <-ra.done:
			return true
		default:
			return false
		}
	})
	if len(live) == 0 {
		return nil
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	var names []string
	for _, ra := range live[:agentCount(targets, len(live))] {
		if c.spawned == nil || !c.spawned.kill(ra.index) {
			_ = ra.conn.Send(agent.Msg{T: agent.TDie})
		}
		c.mu.Lock()
		c.reviving = append(c.reviving, ra.index)
		c.mu.Unlock()
		names = append(names, fmt.Sprintf("agent%d", ra.index))
	}
	return names
}

// agentCount is how many of live agents targets (--nemesis-targets
// agent:one, minority or all) names.
func agentCount(targets string, live int) int {
	switch targets {
	case "minority":
		return max(1, (live-1)/2)
	case "all":
		return live
	}
	return 1
}

// ReviveAgents brings back the agents KillAgents killed that this
// coordinator spawned; others come back when their host restarts them
// (or never: the run goes on without them).
func (c *coordinator) ReviveAgents(context.Context) error {
	c.mu.Lock()
	idx := slices.Clone(c.reviving)
	stopping := c.stopping
	if c.spawned == nil || stopping {
		c.reviving = nil
	}
	c.mu.Unlock()
	if c.spawned == nil || stopping {
		return nil
	}
	for _, i := range idx {
		// Its old connection must be seen lost before it rejoins.
		if ra := c.agentAt(i); ra != nil {
			select {
			case <-ra.done:
			case <-time.After(5 * time.Second):
			}
		}
		if err := c.spawned.restart(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *coordinator) agentAt(i int) *remoteAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agents[i]
}

// planFor is agent i's share: its slice of the clients (and of the op
// budget), its own seed, the lock and how to reach Redis.
func (c *coordinator) planFor(i int) agentPlan {
	w := c.r.workload
	base, n := split(w.Clients, c.n, i)
	aw := w
	aw.Clients = n
	aw.Seed = w.Seed + int64(i)*1_000_003
	if w.Ops > 0 {
		aw.Ops = max(1, w.Ops*int64(n)/int64(w.Clients))
	}
	return agentPlan{Index: i, Lock: c.r.lockName, Workload: aw, Access: agentAccess(c.r.cl, c.r.nemesis.Needs().ClientProxies), Base: base, Total: w.Clients,
		Epoch: c.r.clock.Start().UnixNano(), Crashes: c.r.nemesis.Needs().CrashesClients}
}

// split is the first client and the count of part i of total in n parts.
func split(total, n, i int) (first, count int) {
	q, rem := total/n, total%n
	return i*q + min(i, rem), q + btoi(i < rem)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wait waits until every agent joined and its clock was measured, or the
// join timeout: agents that never joined are named, exit 2.
func (c *coordinator) wait(ctx context.Context) error {
	timeout := cmp.Or(c.r.cfg.JoinTimeout, DefaultJoinTimeout)
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		var missing []string
		for i := range c.n {
			if i >= len(c.agents) || c.agents[i] == nil {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		c.mu.Unlock()
		joined := c.n - len(missing)
		if joined == c.n {
			break
		}
		if time.Now().After(deadline) {
			return configErr(fmt.Errorf("agents: %d of %d joined within %v (missing: agent %s): start them with lockcheck agent --join %s, or raise --join-timeout",
				joined, c.n, timeout, strings.Join(missing, ", "), c.ln.Addr()))
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, ra := range c.joined() {
		select {
		case <-ra.ready:
		case <-ra.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Until(deadline) + 10*time.Second):
			return fmt.Errorf("agent %d joined but never said it was ready", ra.index)
		}
		if ra.failed != "" {
			return configErr(fmt.Errorf("agent %d cannot play: %s", ra.index, ra.failed))
		}
		if ra.lost != "" {
			return fmt.Errorf("before the start: %s", ra.lost)
		}
	}
	// The first measurements: the best of a few round trips each.
	for range 8 {
		c.pingAll()
		time.Sleep(5 * time.Millisecond)
	}
	for _, ra := range c.live() {
		deadline := time.Now().Add(10 * time.Second)
		for !ra.clock.Measured() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !ra.clock.Measured() {
			return fmt.Errorf("agent %d: no answer to the clock measurement in 10s", ra.index)
		}
	}
	return nil
}

// joined returns the agents that joined, by index.
func (c *coordinator) joined() []*remoteAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*remoteAgent
	for _, ra := range c.agents {
		if ra != nil {
			out = append(out, ra)
		}
	}
	return out
}

// everyAgent returns every agent that joined, rejoins included, by index
// then generation.
func (c *coordinator) everyAgent() []*remoteAgent {
	c.mu.Lock()
	past := slices.Clone(c.past)
	c.mu.Unlock()
	all := append(c.joined(), past...)
	slices.SortFunc(all, func(a, b *remoteAgent) int { return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.gen, b.gen)) })
	return all
}

// live returns the agents not lost.
func (c *coordinator) live() []*remoteAgent {
	return slices.DeleteFunc(c.joined(), func(ra *remoteAgent) bool {
		select {
		case <-ra.done:
			return ra.lost != ""
		default:
			return false
		}
	})
}

func (c *coordinator) pingAll() {
	for _, ra := range c.live() {
		_ = ra.conn.Send(agent.Msg{T: agent.TPing, Sent: c.r.clock.Now()})
	}
}

// read serves one agent's messages until its connection ends.
func (c *coordinator) read(ra *remoteAgent) {
	for {
		m, err := ra.conn.Recv()
		recv := c.r.clock.Now()
		if err != nil {
			ra.conn.Failed(err)
			c.lose(ra, err)
			return
		}
		switch m.T {
		case agent.TPong:
			ra.clock.Add(agent.Sample{Sent: m.Sent, Agent: m.Agent, Recv: recv})
		case agent.TOps:
			c.ops(ra, m.Ops)
		case agent.TEnter:
			at, s, ok := c.fences.Enter(m.Key, m.Fence)
			var id int64
			if s != nil {
				id = s.ID
				c.mu.Lock()
				c.sections[id] = s
				c.mu.Unlock()
			}
			_ = ra.conn.Send(agent.Msg{T: agent.TReply, ID: m.ID, At: at, OK: ok, Section: id})
		case agent.TLeave:
			c.mu.Lock()
			s := c.sections[m.Section]
			delete(c.sections, m.Section)
			c.mu.Unlock()
			reply := agent.Msg{T: agent.TReply, ID: m.ID}
			if s != nil {
				exit, _ := ra.clock.To(m.Exit)
				reply.At, reply.OK = c.fences.Leave(m.Key, s, m.Call, exit)
			}
			_ = ra.conn.Send(reply)
		case agent.TReply:
			ra.conn.Deliver(m)
		case agent.TReady:
			ra.readyOnce.Do(func() { close(ra.ready) })
			if ra.gen > 0 {
				go c.startLate(ra)
			}
		case agent.TFail:
			ra.failed = m.Error
			ra.readyOnce.Do(func() { close(ra.ready) })
		case agent.TDone:
			_ = json.Unmarshal(m.Counts, &ra.counts)
			ra.runErr = m.Error
			ra.doneOnce.Do(func() { close(ra.done) })
		}
	}
}

// ops records a batch: each begin is kept until its op completes; each
// op goes to the history on the coordinator's clock.
func (c *coordinator) ops(ra *remoteAgent, ops []agent.Op) {
	for _, w := range ops {
		if w.Begin {
			ra.pmu.Lock()
			ra.pending[w.Process] = append(ra.pending[w.Process], w.Op)
			ra.pmu.Unlock()
			continue
		}
		ra.completed(&w.Op)
		ra.received.Add(1)
		c.r.record(ra.convert(w))
	}
}

// completed drops the begin that op completes: the oldest of its
// process with its f and key (and token, for a release or extend).
func (ra *remoteAgent) completed(op *history.Op) {
	ra.pmu.Lock()
	defer ra.pmu.Unlock()
	p := ra.pending[op.Process]
	for i, b := range p {
		if b.F == op.F && b.Key == op.Key && (b.F == history.Acquire || b.Token == op.Token) {
			p = slices.Delete(p, i, i+1)
			break
		}
	}
	if len(p) == 0 {
		delete(ra.pending, op.Process)
	} else {
		ra.pending[op.Process] = p
	}
}

// convert puts an agent's op on the coordinator's clock, with the bound
// of the conversion as its clock_bound. Times the coordinator decided
// (a fenced write's entry and cut) are exact already.
func (ra *remoteAgent) convert(w agent.Op) history.Op {
	op := w.Op
	var b int64
	if !w.CallRef {
		op.Call, b = ra.clock.To(op.Call)
	}
	if !w.ReturnRef {
		var rb int64
		op.Return, rb = ra.clock.To(op.Return)
		b = max(b, rb)
	}
	if op.Scheduled > 0 {
		op.Scheduled, _ = ra.clock.To(op.Scheduled)
	}
	op.Call = max(op.Call, 0)
	op.Return = max(op.Return, op.Call)
	op.Scheduled = min(max(op.Scheduled, 0), op.Call)
	op.ClockBound = b
	if b > ra.maxBound.Load() {
		ra.maxBound.Store(b)
	}
	return op
}

// lose marks an agent lost (its connection ended before it said done):
// its ops in flight are written as indeterminate, and the run goes on.
func (c *coordinator) lose(ra *remoteAgent, err error) {
	at := c.r.clock.Now()
	select {
	case <-ra.done:
		return // it said done: the end of its connection is the run's
	default:
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	ra.pmu.Lock()
	var inflight []history.Op
	for _, ops := range ra.pending {
		inflight = append(inflight, ops...)
	}
	ra.pending = map[int][]history.Op{}
	ra.pmu.Unlock()
	slices.SortFunc(inflight, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	for _, b := range inflight {
		op := ra.convert(agent.Op{Op: b})
		op.Type, op.Return, op.Error = history.Info, max(at, op.Call), "agent lost"
		if op.F == history.Acquire {
			// It may have taken effect, under a token no one knows.
			op.Token = "unknown-" + lockimpl.NewToken()
		}
		c.r.record(op)
	}
	if closed {
		ra.lost = fmt.Sprintf("agent %d lost at %s (%v)", ra.index, history.Seconds(at), err)
	} else {
		ra.lost = fmt.Sprintf("agent %d lost at %s: %d ops in flight written as info (%v)", ra.index, history.Seconds(at), len(inflight), err)
	}
	c.logf("coordinator: %s", ra.lost)
	ra.doneOnce.Do(func() { close(ra.done) })
}

// play starts the agents and waits until each said done or was lost
// (ctx ended: it tells them to stop first).
func (c *coordinator) play(ctx context.Context) error {
	c.mu.Lock()
	c.started, c.startedAt = true, c.r.clock.Now()
	c.mu.Unlock()
	for _, ra := range c.joined() {
		if err := ra.conn.Send(agent.Msg{T: agent.TStart}); err != nil {
			ra.conn.Close() // its reader sees it and loses the agent: lose runs on one goroutine
		}
	}
	stopPing := make(chan struct{})
	var pw sync.WaitGroup
	pw.Add(1)
	go func() {
		defer pw.Done()
		t := time.NewTicker(agent.PingEvery)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
				c.pingAll()
			}
		}
	}()
	defer func() {
		close(stopPing)
		pw.Wait()
	}()
	w := c.r.workload
	// An agent that neither ends nor is lost by then is given up on.
	limit := time.NewTimer(cmp.Or(w.Duration, time.Hour) + w.OpTimeout + 2*time.Minute)
	defer limit.Stop()
	// Until every agent is done: an agent killed and back (kill-agent)
	// is a new one to wait for.
	stopped := false
	for !c.allDone() {
		if w.Duration > 0 && time.Duration(c.r.clock.Now()-c.startedAt) >= w.Duration {
			// The clients' time is up: no agent comes back now.
			c.mu.Lock()
			c.stopping = true
			c.mu.Unlock()
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			if !stopped {
				stopped = true
				c.mu.Lock()
				c.stopping = true
				c.mu.Unlock()
				for _, a := range c.joined() {
					_ = a.conn.Send(agent.Msg{T: agent.TStop})
				}
			}
		case <-limit.C:
			for _, a := range c.joined() {
				a.conn.Close() // read sees it and loses the agent
			}
		}
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	var errs []error
	for _, ra := range c.joined() {
		if ra.runErr != "" && ra.lost == "" {
			errs = append(errs, fmt.Errorf("agent %d: %s", ra.index, ra.runErr))
		}
	}
	return errors.Join(errs...)
}

// allDone says whether every agent said done or was lost, and no agent
// killed by kill-agent is still to come back.
func (c *coordinator) allDone() bool {
	c.mu.Lock()
	reviving := len(c.reviving) > 0 && !c.stopping
	c.mu.Unlock()
	if reviving {
		return false
	}
	for _, ra := range c.joined() {
		select {
		case <-ra.done:
		default:
			return false
		}
	}
	return true
}

// end measures each clock once more, closes every connection and the
// port, and waits for their goroutines.
func (c *coordinator) end() {
	for range 3 {
		c.pingAll()
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	agents := c.joined()
	_ = c.ln.Close()
	for _, ra := range agents {
		ra.conn.Close()
	}
	c.wg.Wait()
	c.spawned.stop()
}

// unrecorded sums what the agents' clients counted.
func (c *coordinator) unrecorded() history.Unrecorded {
	var u history.Unrecorded
	for _, ra := range c.everyAgent() {
		u.Add(ra.counts)
	}
	return u
}

// lostAgents says which agents were lost, and when.
func (c *coordinator) lostAgents() []string {
	var out []string
	for _, ra := range c.everyAgent() {
		if ra.lost != "" {
			out = append(out, ra.lost)
		}
	}
	return out
}

// runInfo is run.json's account of the agents.
func (c *coordinator) runInfo() []report.RunAgent {
	var out []report.RunAgent
	for _, ra := range c.everyAgent() {
		best := ra.clock.Best()
		a := report.RunAgent{Index: ra.index, Generation: ra.gen, Addr: ra.addr, FirstProc: ra.plan.Base, Clients: ra.plan.Workload.Clients,
			OpsSent: ra.received.Load(), Offset: time.Duration(best.Offset).String(), Bound: time.Duration(best.Bound).String(),
			RTT: time.Duration(best.RTT).String(), MaxClockBound: time.Duration(ra.maxBound.Load()).String(), Lost: ra.lost}
		hist := ra.clock.History()
		step := max(1, len(hist)/300)
		for i := 0; i < len(hist); i += step {
			o := hist[i]
			a.Clock = append(a.Clock, report.RunClockSample{At: o.At, Offset: o.Offset, Bound: o.Bound, RTT: o.RTT})
		}
		out = append(out, a)
	}
	return out
}

// remoteClients is the client side of the faults when the clients are
// the agents': each fault goes to one live agent, picked by the seed,
// which plays it on its own clients.
type remoteClients struct{ c *coordinator }

// faultTimeout bounds an agent's answer to a fault.
const faultTimeout = 5 * time.Second

func (rc remoteClients) ask(rng *rand.Rand, f agent.Fault) []int {
	live := rc.c.live()
	if len(live) == 0 {
		return nil
	}
	// The agents the fault acts on: one picked by the seed, unless
	// --nemesis-targets agent:minority or agent:all names more; each plays
	// it on n of its own clients.
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	var ids []int
	for _, ra := range live[:agentCount(rc.c.r.nemesis.AgentTargets, len(live))] {
		f.Seed = rng.Uint64()
		m, err := ra.conn.Call(agent.Msg{T: agent.TFault, Fault: &f}, faultTimeout)
		if err == nil {
			ids = append(ids, m.IDs...)
		}
	}
	return ids
}

func (rc remoteClients) PauseClients(rng *rand.Rand, n int, d time.Duration, inSection bool) []int {
	return rc.ask(rng, agent.Fault{Kind: "pause", N: n, D: d, InSection: inSection})
}

func (rc remoteClients) CrashClients(rng *rand.Rand, n int) []int {
	return rc.ask(rng, agent.Fault{Kind: "crash", N: n})
}

func (rc remoteClients) CutClients(rng *rand.Rand, n int) []int {
	return rc.ask(rng, agent.Fault{Kind: "cut", N: n})
}

func (rc remoteClients) SkewClients(rng *rand.Rand, n int, rate float64, jump time.Duration) []int {
	return rc.ask(rng, agent.Fault{Kind: "skew", N: n, Rate: rate, Jump: jump})
}

// mirrorToxics has every toxic a fault puts on a node's client proxy
// played by the agents' own proxies for that node (latency, lost-reply):
// their clients do not dial this machine's.
func (c *coordinator) mirrorToxics() {
	for _, n := range c.r.cl.Nodes {
		if n.Client == nil {
			continue
		}
		node := n.Addr
		n.Client.Mirror = func(t cluster.Toxic) error {
			js, _ := json.Marshal(t)
			var errs []error
			for _, ra := range c.live() {
				m, err := ra.conn.Call(agent.Msg{T: agent.TFault, Fault: &agent.Fault{Kind: "toxic", Node: node, Toxic: js}}, faultTimeout)
				if err == nil && m.Error != "" {
					err = errors.New(m.Error)
				}
				if err != nil && !errors.Is(err, agent.ErrLost) {
					errs = append(errs, fmt.Errorf("agent %d: toxic %s: %w", ra.index, t.Name, err))
				}
			}
			return errors.Join(errs...)
		}
	}
}

func (rc remoteClients) HealClients() {
	for _, ra := range rc.c.live() {
		_, _ = ra.conn.Call(agent.Msg{T: agent.TFault, Fault: &agent.Fault{Kind: "heal"}}, faultTimeout)
	}
}

// fitsAgents refuses what agents cannot play: a lock they cannot build by
// name, a fault that acts inside this process's Redis client, fewer
// clients than agents.
func (p *plan) fitsAgents(e lockimpl.Entry) error {
	n := p.cfg.Agents
	switch {
	case n == 0 && p.nemesis.Needs().Agents:
		return fmt.Errorf("--nemesis %s acts on agents: run the clients on agents (--agents N)", strings.Join(p.nemesis.Faults, ","))
	case n == 0:
		return nil
	case n < 0:
		return fmt.Errorf("--agents %d: want a positive count", n)
	case p.workload.Clients < n:
		return fmt.Errorf("--agents %d with --clients %d: every agent needs a client", n, p.workload.Clients)
	case p.cfg.Factory != nil || e.OwnClient:
		return fmt.Errorf("--agents: lock %s is built here only; agents build a built-in lock by name (see lockcheck list)", e.Name)
	case p.cfg.Metrics != "":
		return errors.New("--agents with --metrics: the clients' counters are on the agents; run without --metrics")
	case p.cfg.AgentToken == "" && p.cfg.SpawnAgents == "" && n > 0:
		return errors.New("--agents needs a token: set LOCKCHECK_AGENT_TOKEN (the same on every agent)")
	}
	if _, err := lockimpl.Builtin().Lookup(e.Name); err != nil {
		return fmt.Errorf("--agents: lock %s is not built in; agents build a built-in lock by name (see lockcheck list)", e.Name)
	}
	if p.cfg.AgentToken == "" {
		p.cfg.AgentToken = randomToken()
	}
	if p.cfg.Cluster.External.TLS.Enabled || p.cfg.Cluster.External.TLS.CA != "" {
		return errors.New("--agents with an external Redis over TLS: agents reach Redis without TLS so far; run without --agents, or a Redis without TLS")
	}
	if p.workload.Rate > 0 {
		return errors.New("--agents with --rate: the open model is not split across agents yet; use the closed model")
	}
	return nil
}
