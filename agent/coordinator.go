package agent

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// DefaultJoinTimeout is how long a coordinator waits for its agents.
const DefaultJoinTimeout = time.Minute

// DrainLimit is how long, once the run's time and an op timeout are up,
// the coordinator waits for each agent to say it is done: its clients
// stopped, its lock closed, its last ops sent. An agent not done by then
// is lost, its ops in flight indeterminate, and Play says which (a
// DrainError).
const DrainLimit = 30 * time.Second

// drainLimit is DrainLimit, shorter in tests (export_test.go).
var drainLimit = DrainLimit

// DrainError names the agents that were not done within DrainLimit.
type DrainError struct{ Agents []int }

func (e *DrainError) Error() string {
	return fmt.Sprintf("phase drain passed its deadline of %v: agent %v did not say it was done, and was let go", drainLimit, e.Agents)
}

// CoordinatorConfig is what a coordinator needs of its run: where to
// listen and whom to admit, the clients to split among the agents and
// how they reach Redis, the run's clock and where its ops go.
type CoordinatorConfig struct {
	// Options are the agent settings (Spawn's agents log under Dir).
	Options
	Dir string
	// Lock is the built-in lock the agents build by name; Workload the
	// run's (split among them); Cluster the Redis they reach.
	Lock     string
	Workload workload.Config
	Cluster  *cluster.Cluster
	// ClientProxies: the faults act through client proxies, so each
	// agent runs its own. Crashes: the faults crash clients.
	ClientProxies bool
	Crashes       bool
	// AgentTargets is --nemesis-targets' agent part.
	AgentTargets string
	// Clock is the run's clock; Record takes each merged op; Log, if
	// set, receives a line at each agent's join, loss and rejoin.
	Clock  *history.Clock
	Record func(history.Op)
	Log    io.Writer
}

// Coordinator plays a run's clients through agents on other machines:
// it welcomes them, measures their clocks, starts them, and turns what
// they stream into the run's one history, each op on its clock within a
// bound (clock_bound). It is the run's workload.Players.
type Coordinator struct {
	cfg    CoordinatorConfig
	ln     net.Listener
	n      int
	fences *workload.Fences

	mu       sync.Mutex
	agents   []*remoteAgent
	started  bool
	closed   bool
	sections map[int64]*workload.Admission
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
	conn  *Conn
	addr  string
	clock *Clock
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
	// silent is how long the agent had been silent when it was taken as
	// lost for it (closeSilent); 0 if it was not.
	silent atomic.Int64

	pmu     sync.Mutex
	pending map[int][]history.Op // ops announced and not yet completed, by process
}

// Clients is the clients' side of the faults: played by the agents.
func (c *Coordinator) Clients() nemesis.Clients { return remoteClients{c} }

// Agents is the agents' side of the faults (kill-agent).
func (c *Coordinator) Agents() nemesis.Agents { return c }

// Finish ends the agents.
func (c *Coordinator) Finish() { c.End() }

// Account is run.json's account of the agents, and which were lost, and
// when.
func (c *Coordinator) Account() ([]report.RunAgent, []string) { return c.runInfo(), c.lostAgents() }

// Scope is "": the agents build the lock, and do not say.
func (c *Coordinator) Scope() string { return "" }

// OwnTimeout is 0: the agents' locks are built there.
func (c *Coordinator) OwnTimeout() time.Duration { return 0 }

// Listen opens the coordinator's port and starts welcoming agents
// (spawning them first if cfg.Spawn).
func Listen(cfg CoordinatorConfig) (*Coordinator, error) {
	addr := cmp.Or(cfg.Listen, "127.0.0.1:0")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, workload.ConfigErr(fmt.Errorf("--listen %s: %w: is another coordinator on that port? choose another with --listen", addr, err))
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	c := &Coordinator{cfg: cfg, ln: ln, n: cfg.Agents, fences: workload.NewFences(cfg.Clock.Now), sections: map[int64]*workload.Admission{}}
	c.mirrorToxics()
	if cfg.Listening != nil {
		cfg.Listening(ln.Addr().String())
	}
	c.wg.Add(1)
	go c.accept()
	if cfg.Spawn != "" {
		if c.spawned, err = spawnAgents(cfg.Spawn, ln.Addr().String(), cfg.Token, cfg.Dir, c.n); err != nil {
			c.End()
			return nil, err
		}
	}
	return c, nil
}

func (c *Coordinator) logf(format string, args ...any) {
	if w := c.cfg.Log; w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func (c *Coordinator) agentAt(i int) *remoteAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agents[i]
}

// joined returns the agents that joined, by index.
func (c *Coordinator) joined() []*remoteAgent {
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
func (c *Coordinator) everyAgent() []*remoteAgent {
	c.mu.Lock()
	past := slices.Clone(c.past)
	c.mu.Unlock()
	all := append(c.joined(), past...)
	slices.SortFunc(all, func(a, b *remoteAgent) int { return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.gen, b.gen)) })
	return all
}

// live returns the agents not lost.
func (c *Coordinator) live() []*remoteAgent {
	return slices.DeleteFunc(c.joined(), func(ra *remoteAgent) bool {
		select {
		case <-ra.done:
			return ra.lost != ""
		default:
			return false
		}
	})
}

func (c *Coordinator) pingAll() {
	for _, ra := range c.live() {
		_ = ra.conn.Send(Msg{T: TPing, Sent: c.cfg.Clock.Now()})
	}
}

// Play starts the agents and waits until each said done or was lost
// (ctx ended: it tells them to stop first).
func (c *Coordinator) Play(ctx context.Context) error {
	c.mu.Lock()
	c.started, c.startedAt = true, c.cfg.Clock.Now()
	c.mu.Unlock()
	for _, ra := range c.joined() {
		if err := ra.conn.Send(Msg{T: TStart}); err != nil {
			ra.conn.Close() // its reader sees it and loses the agent: lose runs on one goroutine
		}
	}
	defer c.pinging()()
	w := c.cfg.Workload
	// An agent that neither ends nor is lost by then is given up on.
	limit := time.NewTimer(cmp.Or(w.Duration, time.Hour) + w.OpTimeout + drainLimit)
	defer limit.Stop()
	var drainErr *DrainError
	// Until every agent is done: an agent killed and back (kill-agent)
	// is a new one to wait for.
	stopped := false
	for !c.allDone() {
		if w.Duration > 0 && time.Duration(c.cfg.Clock.Now()-c.startedAt) >= w.Duration {
			c.setStopping() // the clients' time is up: no agent comes back now
		}
		c.closeSilent(Silence)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			if !stopped {
				stopped = true
				c.setStopping()
				for _, a := range c.joined() {
					_ = a.conn.Send(Msg{T: TStop})
				}
			}
		case <-limit.C:
			drainErr = &DrainError{}
			for _, a := range c.live() {
				drainErr.Agents = append(drainErr.Agents, a.index)
				a.conn.Close() // read sees it and loses the agent
			}
		}
	}
	c.setStopping()
	var errs []error
	if drainErr != nil {
		errs = append(errs, drainErr)
	}
	for _, ra := range c.joined() {
		if ra.runErr != "" && ra.lost == "" {
			errs = append(errs, fmt.Errorf("agent %d: %s", ra.index, ra.runErr))
		}
	}
	return errors.Join(errs...)
}

// pinging measures every agent's clock each PingEvery until the func it
// returns is called.
func (c *Coordinator) pinging() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		every(ctx, PingEvery, func() bool { c.pingAll(); return false })
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// closeSilent closes the connection of every live agent silent for
// longer than silence (it answers each ping, every PingEvery): its reader
// then loses it, and its ops in flight are written as indeterminate.
func (c *Coordinator) closeSilent(silence time.Duration) {
	for _, ra := range c.live() {
		if s := ra.conn.Silent(); s > silence && ra.silent.CompareAndSwap(0, int64(s)) {
			ra.conn.Close()
		}
	}
}

// setStopping marks the run as ending: no agent rejoins from here on.
func (c *Coordinator) setStopping() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
}

// allDone says whether every agent said done or was lost, and no agent
// killed by kill-agent is still to come back.
func (c *Coordinator) allDone() bool {
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
func (c *Coordinator) End() {
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

// Unrecorded sums what the agents' clients counted.
func (c *Coordinator) Unrecorded() history.Unrecorded {
	var u history.Unrecorded
	for _, ra := range c.everyAgent() {
		u.Add(ra.counts)
	}
	return u
}

// lostAgents says which agents were lost, and when.
func (c *Coordinator) lostAgents() []string {
	var out []string
	for _, ra := range c.everyAgent() {
		if ra.lost != "" {
			out = append(out, ra.lost)
		}
	}
	return out
}

// runInfo is run.json's account of the agents.
func (c *Coordinator) runInfo() []report.RunAgent {
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
