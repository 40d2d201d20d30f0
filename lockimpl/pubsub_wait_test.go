package lockimpl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

// releaseOnRefusal is a go-redis hook that, on the first SET whose reply
// is a refusal (nil), runs release before the lock sees the reply: the
// unlock falls between the waiter's try and whatever it does next.
type releaseOnRefusal struct {
	once    sync.Once
	release func()
}

func (h *releaseOnRefusal) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *releaseOnRefusal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *releaseOnRefusal) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.EqualFold(cmd.Name(), "set") && errors.Is(err, redis.Nil) {
			h.once.Do(h.release)
		}
		return err
	}
}

// pubsubPair is a holder's pubsub-wait lock and a waiter's of the given
// kind whose first refused try has the holder release its lease (held
// with a minute's TTL) before the waiter sees the refusal.
func pubsubPair(t *testing.T, late bool, poll time.Duration) (*PubSubWait, *redis.Client) {
	t.Helper()
	c := testutil.StartRedis(t)
	env := Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 4}
	hl, err := NewPubSubWait(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(hl) })
	ctx := context.Background()
	held, err := hl.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hook := &releaseOnRefusal{release: func() {
		if err := hl.Release(ctx, held); err != nil {
			t.Errorf("holder's release: %v", err)
		}
	}}
	env.Hooks = []redis.Hook{hook}
	wl, err := newPubSubWait(env, late)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(wl) })
	w := wl.(*PubSubWait)
	w.poll = poll
	rc := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], Password: c.Password})
	t.Cleanup(func() { rc.Close() })
	return w, rc
}

// TestPubSubWait_WokenByTheUnlock: the unlock falls between a waiter's
// refused try and its sleep. pubsub-wait, subscribed before its try,
// is woken by the unlock's message and takes the key before its wait of
// a minute runs out, with no poll to help (its fallback set to an hour).
// broken-wait-subscribe-after-try subscribes after the unlock: it sleeps
// out its wait of 2 s on a free key and takes it only at the end.
func TestPubSubWait_WokenByTheUnlock(t *testing.T) {
	ctx := context.Background()
	t.Run("pubsub-wait", func(t *testing.T) {
		w, rc := pubsubPair(t, false, time.Hour)
		start := time.Duration(w.now())
		l, err := w.AcquireWait(ctx, "k", time.Minute, time.Minute)
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if l.Acquired-start >= time.Minute {
			t.Errorf("took the key %v into its wait of 1m: not woken by the unlock", l.Acquired-start)
		}
		if v := rc.Get(ctx, "k").Val(); v != l.Token {
			t.Errorf("key holds %q, want the waiter's %q", v, l.Token)
		}
	})
	t.Run("broken-wait-subscribe-after-try", func(t *testing.T) {
		w, _ := pubsubPair(t, true, 0)
		start := time.Duration(w.now())
		l, err := w.AcquireWait(ctx, "k", time.Minute, 2*time.Second)
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if l.Acquired-start < 2*time.Second {
			t.Errorf("took the key %v into its wait of 2s, want at its end (the unlock fell before it subscribed)", l.Acquired-start)
		}
	})
	if got, want := lockEntryNames(), []string{"pubsub-wait", "broken-wait-subscribe-after-try"}; !containsAll(got, want) {
		t.Errorf("registry: %v, want %v among them", got, want)
	}
}

func lockEntryNames() []string { return All().Names() }

func containsAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
