package agent_test

import (
	"context"
	"errors"
	"net"
	"strings"
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
// agent, with nothing left running. Its time is measured from the
// agent's start (Redis's start and the join before it are a busy
// machine's), against the drain the default limit would have given.
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
	started := make(chan time.Time, 1)
	go stuckAgent(t, addr, stopped, started)
	_, err := harness.Run(context.Background(), cfg)
	ended := time.Now()
	testutil.NoRedisChildren(t)
	var de *agent.DrainError
	if !errors.As(err, &de) || len(de.Agents) != 1 || de.Agents[0] != 0 || !strings.Contains(err.Error(), "deadline of 2s") {
		t.Fatalf("got %v, want the drain named at its deadline of 2s, with agent 0", err)
	}
	// Ended at the 2 s drain, not the default's: the clients' time and
	// the default drain (30 s) would end later than this bound, which
	// leaves 28 s for the check and Redis's stop on a loaded machine.
	select {
	case at := <-started:
		if took, bound := ended.Sub(at), w.Duration+w.OpTimeout+agent.DrainLimit; took > bound {
			t.Errorf("the run took %v from the agent's start, want less than the %v the default drain would have given", took, bound)
		}
	default:
		t.Error("the agent never got its start")
	}
}

// stuckAgent joins the coordinator at <-addr as agent 0, says it is
// ready, answers pings until the start, then reads nothing more and
// sends an empty batch of ops every 100 ms until stopped.
func stuckAgent(t *testing.T, addr <-chan string, stopped <-chan struct{}, started chan<- time.Time) {
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
			started <- time.Now()
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
