package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/version"
	"github.com/lockcheck/lockcheck/workload"
)

func (c *Coordinator) accept() {
	defer c.wg.Done()
	for {
		nc, err := c.ln.Accept()
		if err != nil {
			return // closed
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.welcome(NewConn(nc))
		}()
	}
}

// welcome checks an agent's hello and gives it its share of the clients,
// or refuses it with one line on both sides.
func (c *Coordinator) welcome(conn *Conn) {
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	m, err := conn.Recv()
	if err != nil || m.T != THello {
		c.logf("coordinator: refused %s: no hello (%v)", conn.RemoteAddr(), err)
		conn.Close()
		return
	}
	ra, why := c.admit(conn, m)
	if why != "" {
		c.logf("coordinator: refused agent at %s: %s", conn.RemoteAddr(), why)
		_ = conn.Send(Msg{T: TRefuse, Error: why})
		conn.Close()
		return
	}
	plan, _ := json.Marshal(ra.plan)
	if err := conn.Send(Msg{T: TWelcome, Index: ra.index, Plan: plan}); err != nil {
		c.lose(ra, err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	c.logf("coordinator: agent %d joined from %s (clients %d to %d)", ra.index, ra.addr, ra.plan.Base, ra.plan.Base+ra.plan.Workload.Clients-1)
	c.read(ra)
}

// admit checks a hello and, if it passes, makes the agent's plan.
func (c *Coordinator) admit(conn *Conn, m Msg) (*remoteAgent, string) {
	if !TokenMatches(m.Token, c.cfg.Token) {
		return nil, "wrong agent token: give both sides the same LOCKCHECK_AGENT_TOKEN"
	}
	if m.Version != version.Version {
		return nil, fmt.Sprintf("agent is lockcheck %s, the coordinator %s: run the same version on both", m.Version, version.Version)
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
func (c *Coordinator) newAgent(conn *Conn, i, gen int) *remoteAgent {
	ra := &remoteAgent{index: i, gen: gen, conn: conn, addr: conn.RemoteAddr(), clock: &Clock{Off: c.cfg.NoClockCorrection},
		done: make(chan struct{}), ready: make(chan struct{}), pending: map[int][]history.Op{}, plan: c.planFor(i)}
	ra.plan.Gen = gen
	return ra
}

// rejoin admits agent i back after it was lost (kill-agent brought it
// back, or its host did): its clients play the rest of the run under new
// process ids. c.mu is held.
func (c *Coordinator) rejoin(conn *Conn, i int) (*remoteAgent, string) {
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
	w := c.cfg.Workload
	left := w.Duration - time.Duration(c.cfg.Clock.Now()-c.startedAt)
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
func (c *Coordinator) startLate(ra *remoteAgent) {
	for range 4 {
		_ = ra.conn.Send(Msg{T: TPing, Sent: c.cfg.Clock.Now()})
		time.Sleep(5 * time.Millisecond)
	}
	_ = ra.conn.Send(Msg{T: TStart})
	c.logf("coordinator: agent %d rejoined at %s (generation %d)", ra.index, history.Seconds(c.cfg.Clock.Now()), ra.gen)
}

// planFor is agent i's share: its slice of the clients (and of the op
// budget), its own seed, the lock and how to reach Redis.
func (c *Coordinator) planFor(i int) agentPlan {
	w := c.cfg.Workload
	base, n := split(w.Clients, c.n, i)
	aw := w
	aw.Clients = n
	aw.Seed = w.Seed + int64(i)*1_000_003
	if w.Ops > 0 {
		aw.Ops = max(1, w.Ops*int64(n)/int64(w.Clients))
	}
	return agentPlan{Index: i, Lock: c.cfg.Lock, Workload: aw, Access: ForAgents(c.cfg.Cluster, c.cfg.ClientProxies), Base: base, Total: w.Clients,
		Epoch: c.cfg.Clock.Start().UnixNano(), Crashes: c.cfg.Crashes}
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

// Wait waits until every agent joined and its clock was measured, or the
// join timeout: agents that never joined are named, exit 2.
func (c *Coordinator) Wait(ctx context.Context) error {
	timeout := cmp.Or(c.cfg.JoinTimeout, DefaultJoinTimeout)
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
			return workload.ConfigErr(fmt.Errorf("agents: %d of %d joined within %v (missing: agent %s): start them with lockcheck agent --join %s, or raise --join-timeout",
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
			return workload.ConfigErr(fmt.Errorf("agent %d cannot play: %s", ra.index, ra.failed))
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
