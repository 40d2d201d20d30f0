package process_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestProcess_Wait: the polling waiter (setnx-block) served as a lock
// process, one for every client and one a client, is a lockimpl.Waiter
// with the wake-up bound its ping's reply declared (1 s); its blocking
// acquire of a key another holds waits inside the process and takes the
// key once the holder releases it, saying when it sent that try
// (Lease.Acquired, between the release, less the pipe's latency, and
// the reply); one whose wait
// runs out is refused after the wait, not before. setnx's process
// declares no bound and is no Waiter.
func TestProcess_Wait(t *testing.T) {
	c := testutil.StartRedis(t)
	ctx := lockimpl.WithClient(context.Background(), 0)
	clock := time.Now()
	now := func() time.Duration { return time.Since(clock) }
	for _, perClient := range []bool{false, true} {
		env := lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, OpTimeout: 5 * time.Second, Now: func() int64 { return int64(now()) }}
		l, err := served(t, "setnx-block", perClient).Factory(env)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lockimpl.Close(l) })
		w, ok := lockimpl.WaiterOf(l)
		if !ok || w.WakeBound() != time.Second {
			t.Fatalf("per client %v: WaiterOf %v, bound %v; want a Waiter bound by 1s", perClient, ok, ok && w.WakeBound() == time.Second)
		}
		key := fmt.Sprintf("k-%v", perClient)
		held, err := l.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		releasedAt := make(chan time.Duration, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			releasedAt <- now()
			_ = l.Release(ctx, held)
		}()
		got, err := w.AcquireWait(ctx, key, time.Minute, 5*time.Second)
		returned := now()
		released := <-releasedAt
		if err != nil {
			t.Fatalf("per client %v: a wait for a key released after 300 ms: %v", perClient, err)
		}
		// The process says when in its own time after it read the
		// request: on our clock that is earlier by the pipe's latency
		// (never later), allowed 100 ms here.
		if got.Acquired < released-100*time.Millisecond || got.Acquired > returned {
			t.Errorf("per client %v: the try that took the key at %v, want between the release (%v, less 100 ms) and the reply (%v)", perClient, got.Acquired, released, returned)
		}
		start := now()
		if _, err := w.AcquireWait(ctx, key, time.Minute, 400*time.Millisecond); !errors.Is(err, lockimpl.ErrNotAcquired) || now()-start < 400*time.Millisecond {
			t.Errorf("per client %v: a wait of 400 ms on a held key: %v after %v, want ErrNotAcquired after 400 ms or more", perClient, err, now()-start)
		}
	}
	l, err := build(t, served(t, "setnx", false), c.Addrs(), c.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lockimpl.WaiterOf(l); ok {
		t.Error("setnx's process is a Waiter")
	}
}
