package agent

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestHeartbeat_AgentStopsOnSilence: an agent whose coordinator has gone
// silent (a half-open connection: nothing comes, nothing fails) stops its
// clients within the silence bound, with ErrLost, and closes the
// connection; one that keeps hearing pings goes on.
func TestHeartbeat_AgentStopsOnSilence(t *testing.T) {
	here, there := net.Pipe()
	defer there.Close()
	a := &agentRun{conn: NewConn(here)}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	a.stop = stop
	// The other side drains what the agent sends, and pings for a while.
	go func() {
		c := NewConn(there)
		go func() {
			for {
				if _, err := c.Recv(); err != nil {
					return
				}
			}
		}()
		for range 4 {
			_ = c.Send(Msg{T: TPing})
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() {
		for {
			if _, err := a.conn.Recv(); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.heartbeat(ctx, 500*time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // 60 times the silence: a loaded machine's delays are well inside
		t.Fatal("heartbeat did not stop the run within 30 s of the pings' start (silence bound 500 ms)")
	}
	took := time.Since(start)
	if !errors.Is(context.Cause(ctx), ErrLost) {
		t.Errorf("run stopped with %v, want ErrLost", context.Cause(ctx))
	}
	// The last ping came at 300 ms at the earliest, then 500 ms of
	// silence: never sooner (later only by the checks' and a busy
	// machine's delays).
	if took < 800*time.Millisecond {
		t.Errorf("stopped after %v, while pings still came: want at least the last ping plus the silence", took)
	}
	if err := a.conn.Send(Msg{T: TPong}); err == nil {
		t.Error("the connection is still open after the heartbeat gave up")
	}
}

// TestHeartbeat_CoordinatorLosesSilentAgent: the coordinator closes the
// connection of an agent silent past the bound (its reader then loses
// it), not one that was heard from.
func TestHeartbeat_CoordinatorLosesSilentAgent(t *testing.T) {
	mk := func(i int) (*remoteAgent, net.Conn) {
		here, there := net.Pipe()
		return &remoteAgent{index: i, conn: NewConn(here), done: make(chan struct{}), ready: make(chan struct{})}, there
	}
	quiet, qt := mk(0)
	talky, tt := mk(1)
	defer qt.Close()
	defer tt.Close()
	c := &Coordinator{n: 2, agents: []*remoteAgent{quiet, talky}}
	go func() { _ = NewConn(tt).Send(Msg{T: TPong}) }()
	// The quiet one silent 2 s (at least: a busy machine sleeps longer),
	// the talky one heard just before the check; the bound between them
	// leaves a second for the machine to take between the two.
	time.Sleep(2 * time.Second)
	if _, err := talky.conn.Recv(); err != nil {
		t.Fatal(err)
	}
	c.closeSilent(time.Second)
	if d := quiet.silent.Load(); d == 0 {
		t.Error("the silent agent was not taken as lost")
	}
	if talky.silent.Load() != 0 {
		t.Error("the agent heard from was taken as lost")
	}
	if _, err := quiet.conn.Recv(); err == nil {
		t.Error("the silent agent's connection is still open")
	}
}
