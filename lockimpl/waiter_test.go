package lockimpl_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// newWaiter builds the blocking lock name on a Redis of its own.
func newWaiter(t *testing.T, name string) (lockimpl.Waiter, lockimpl.Locker, *redis.Client) {
	t.Helper()
	e, err := lockimpl.All().Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	l, rc := lockOn(t, testutil.StartRedis(t), e.Factory, nil)
	w, ok := lockimpl.WaiterOf(l)
	if !ok {
		t.Fatalf("%s is not a lockimpl.Waiter", name)
	}
	return w, l, rc
}

// setCalls is how many SETs Redis has run (INFO commandstats).
func setCalls(t *testing.T, rc *redis.Client) string {
	t.Helper()
	info, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_set:") {
			return strings.Fields(strings.NewReplacer(":", " ", ",", " ").Replace(line))[1]
		}
	}
	return ""
}

func TestSetNXBlock_WaitsForTheKey(t *testing.T) {
	ctx := context.Background()
	w, l, rc := newWaiter(t, "setnx-block")
	if got := w.WakeBound(); got != lockimpl.DefaultWakeBound {
		t.Errorf("WakeBound: got %v, want %v", got, lockimpl.DefaultWakeBound)
	}
	holder, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// A wait that runs out on a held key is a refusal, no earlier than
	// the wait.
	start := time.Now()
	if _, err := w.AcquireWait(ctx, "k", time.Minute, 200*time.Millisecond); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("wait on a held key: got %v, want ErrNotAcquired", err)
	}
	if got := time.Since(start); got < 200*time.Millisecond {
		t.Errorf("wait on a held key refused after %v, before its wait of 200ms ran out", got)
	}
	// A waiter refused once takes the key when it is released, within its
	// wait, under the lease of the try that took it.
	before := setCalls(t, rc)
	type result struct {
		l   lockimpl.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		le, err := w.AcquireWait(ctx, "k", time.Minute, 2*time.Minute)
		got <- result{le, err}
	}()
	const deadline = time.Minute // the waiter's first try, on a busy machine
	for t0 := time.Now(); setCalls(t, rc) == before; time.Sleep(5 * time.Millisecond) {
		if time.Since(t0) > deadline {
			t.Fatalf("the waiter sent no SET within %v", deadline)
		}
	}
	if err := l.Release(ctx, holder); err != nil {
		t.Fatal(err)
	}
	r := <-got // within its wait of 2 minutes: AcquireWait's own bound
	if r.err != nil {
		t.Fatalf("waiter after the release: %v", r.err)
	}
	if v := rc.Get(ctx, "k").Val(); v != r.l.Token {
		t.Errorf("key holds %q, want the waiter's token %q", v, r.l.Token)
	}
	if r.l.Acquired <= holder.Acquired {
		t.Errorf("waiter's lease Acquired %v, want after the holder's %v (the try that took the key, not the first)", r.l.Acquired, holder.Acquired)
	}
}

func TestBrokenWaitSlowPoll_DeclaresLessThanItPolls(t *testing.T) {
	ctx := context.Background()
	w, l, _ := newWaiter(t, "broken-wait-slow-poll")
	if got := w.WakeBound(); got != 250*time.Millisecond {
		t.Errorf("WakeBound: got %v, want 250ms", got)
	}
	holder, err := l.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The key expires 300 ms in; the waiter, refused at once, sleeps its
	// poll of 1 s past it: it takes the key no earlier than a poll after
	// its first try.
	start := time.Now()
	le, err := w.AcquireWait(ctx, "k", time.Minute, time.Minute)
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if got := time.Since(start); got < time.Second {
		t.Errorf("took the key after %v, want a poll of 1s at least (the key expired 300ms in)", got)
	}
	if le.Acquired-holder.Acquired < time.Second {
		t.Errorf("the try that took the key was sent %v after the holder's, want 1s at least", le.Acquired-holder.Acquired)
	}
}
