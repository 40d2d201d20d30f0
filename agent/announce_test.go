package agent

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// releaseOnly is the lock under an announcer here: what it does with
// Redis is not the question, only what the coordinator is told first.
type releaseOnly struct{ lockimpl.Locker }

func (releaseOnly) Release(context.Context, lockimpl.Lease) error { return nil }

// TestAnnouncer_FlushesFirst: an op's begin reaches the coordinator behind
// every op its agent recorded before it. The acquire that got a lease is
// on the wire before that lease's release is announced, so an agent that
// dies in between leaves the coordinator the acquire (not an acquire
// under a token no one knows, and a release of nothing: a key held on
// paper that another client then acquired, as TestCLI_KillAgent once
// found).
func TestAnnouncer_FlushesFirst(t *testing.T) {
	here, there := net.Pipe()
	defer there.Close()
	a := &agentRun{conn: NewConn(here), plan: &agentPlan{Workload: workload.Config{Clients: 2}, Total: 4, Base: 2},
		now: func() int64 { return time.Now().UnixNano() }}
	got := make(chan []Op, 8)
	go func() {
		defer close(got)
		c := NewConn(there)
		for {
			m, err := c.Recv()
			if err != nil {
				return
			}
			got <- m.Ops
		}
	}()
	a.record(history.Op{Process: 1, F: history.Acquire, Type: history.OK, Key: "k", Token: "t1", TTLms: 100, Call: 1, Return: 2})
	ann := &announcer{Locker: releaseOnly{}, run: a}
	if err := ann.Release(lockimpl.WithClient(context.Background(), 1), lockimpl.Lease{Key: "k", Token: "t1"}); err != nil {
		t.Fatal(err)
	}
	here.Close()
	var seq []Op
	for ops := range got {
		seq = append(seq, ops...)
	}
	if len(seq) != 2 {
		t.Fatalf("got %d ops on the wire, want the acquire and the release's begin: %+v", len(seq), seq)
	}
	if seq[0].Begin || seq[0].F != history.Acquire || !seq[1].Begin || seq[1].F != history.Release {
		t.Errorf("on the wire: %+v then %+v; want the acquire's completion, then the release's begin", seq[0], seq[1])
	}
	for _, op := range seq {
		if op.Process != 3 {
			t.Errorf("op %s under process %d, want the run's id 3 (agent base 2, local 1)", op.F, op.Process)
		}
	}
}
