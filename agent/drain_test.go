package agent_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/internal/version"
	"github.com/lockcheck/lockcheck/workload"
)

// TestCoordinator_AgentThatStopsReading: an agent joins, answers the
// clock measurement, and once told to start stops reading and never says
// done, while it keeps sending (so it is not silent). The run ends within
// its bound (duration + op timeout + the drain), naming the drain and the
// agent, with nothing left running.
func TestCoordinator_AgentThatStopsReading(t *testing.T) {
	testutil.RequireRedis(t)
	defer agent.SetDrainLimit(2 * time.Second)()
	w := workload.Config{Clients: 4, Keys: 2, Duration: time.Second, TTL: 200 * time.Millisecond, OpTimeout: 500 * time.Millisecond, Seed: 1}
	cfg := agentConfig(t, "setnx", w)
	cfg.Agents, cfg.Token = 1, testToken
	addr := make(chan string, 1)
	cfg.Listening = func(a string) { addr <- a }
	stopped := make(chan struct{})
	defer close(stopped)
	go stuckAgent(t, addr, stopped)
	began := time.Now()
	_, err := harness.Run(context.Background(), cfg)
	took := time.Since(began)
	testutil.NoRedisChildren(t)
	var de *agent.DrainError
	if !errors.As(err, &de) || len(de.Agents) != 1 || de.Agents[0] != 0 {
		t.Fatalf("got %v, want the drain named, with agent 0", err)
	}
	// Redis's start and stop, the join and the clock measurement on a
	// loaded machine: 20 s beside the 3.5 s the run is bounded to.
	if bound := w.Duration + w.OpTimeout + 2*time.Second + 20*time.Second; took > bound {
		t.Errorf("the run took %v, want at most %v", took, bound)
	}
}

// stuckAgent joins the coordinator at <-addr as agent 0, says it is
// ready, answers pings until the start, then reads nothing more and
// sends an empty batch of ops every 100 ms until stopped.
func stuckAgent(t *testing.T, addr <-chan string, stopped <-chan struct{}) {
	var a string
	select {
	case a = <-addr:
	case <-stopped:
		return
	}
	nc, err := net.Dial("tcp", a)
	if err != nil {
		t.Error(err)
		return
	}
	defer nc.Close()
	c := agent.NewConn(nc)
	if err := c.Send(agent.Msg{T: agent.THello, Version: version.Version, Token: testToken, Index: 0}); err != nil {
		t.Error(err)
		return
	}
	if m, err := c.Recv(); err != nil || m.T != agent.TWelcome {
		t.Errorf("welcome: %v %v", m.T, err)
		return
	}
	_ = c.Send(agent.Msg{T: agent.TReady})
	for {
		m, err := c.Recv()
		if err != nil {
			return
		}
		if m.T == agent.TStart {
			break
		}
		if m.T == agent.TPing {
			_ = c.Send(agent.Msg{T: agent.TPong, Sent: m.Sent, Agent: m.Sent})
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			return
		case <-tick.C:
			if c.Send(agent.Msg{T: agent.TOps}) != nil {
				return
			}
		}
	}
}
