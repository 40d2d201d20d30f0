package agent

import (
	"errors"
	"net"
	"testing"
	"time"
)

// pair is a connected coordinator end and agent end over loopback TCP,
// the coordinator answering every request at once, as its resource does.
func pair(tb testing.TB) (*Conn, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		coord := NewConn(c)
		defer coord.Close()
		for {
			m, err := coord.Recv()
			if err != nil {
				return
			}
			_ = coord.Send(Msg{T: TReply, ID: m.ID, At: 1, OK: true, Section: 7})
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	ag := NewConn(c)
	go func() {
		for {
			m, err := ag.Recv()
			if err != nil {
				ag.Failed(err)
				return
			}
			ag.Deliver(m)
		}
	}()
	return ag, func() { ag.Close(); ln.Close(); <-done }
}

// TestConn_Call: a request gets its own reply; once the connection is
// gone, a request fails at once as lost instead of waiting.
func TestConn_Call(t *testing.T) {
	ag, stop := pair(t)
	m, err := ag.Call(Msg{T: TEnter, Key: "k", Fence: 3}, time.Second)
	if err != nil || m.Section != 7 || !m.OK {
		t.Fatalf("call: %+v, %v", m, err)
	}
	stop()
	// Lost at once, not at the timeout: a call that waited out its
	// timeout fails with "no reply in", not ErrLost.
	if _, err := ag.Call(Msg{T: TEnter}, 5*time.Second); !errors.Is(err, ErrLost) {
		t.Errorf("call on a closed connection: %v, want ErrLost at once (not a wait for its timeout)", err)
	}
}

// BenchmarkConn_Call is one fenced section's admission round trip (enter
// or leave) between an agent and its coordinator over loopback: what the
// shared resource adds per section on one machine.
func BenchmarkConn_Call(b *testing.B) {
	ag, stop := pair(b)
	defer stop()
	b.ResetTimer()
	for range b.N {
		if _, err := ag.Call(Msg{T: TEnter, Key: "lock:1", Fence: 42}, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
