package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// newSemaphore builds the lock name with k permits on a Redis of its own.
func newSemaphore(t *testing.T, name string, k int) (lockimpl.Locker, *redis.Client) {
	t.Helper()
	c := testutil.StartRedis(t)
	e, err := lockimpl.All().Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return lockOn(t, c, func(env lockimpl.Env) (lockimpl.Locker, error) {
		env.Permits = k
		return e.Factory(env)
	}, nil)
}

func TestSemaphore_Semantics(t *testing.T) {
	ctx := context.Background()
	l, rc := newSemaphore(t, "semaphore", 3)
	if got := lockimpl.PermitsOf(l); got != 3 {
		t.Fatalf("PermitsOf: got %d, want 3", got)
	}
	var held []lockimpl.Lease
	for i := range 3 {
		le, err := l.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf("acquire %d of 3 permits: %v", i+1, err)
		}
		held = append(held, le)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire a 4th permit: got %v, want ErrNotAcquired", err)
	}
	if got := rc.PTTL(ctx, "k").Val(); got <= 0 || got > time.Minute {
		t.Errorf("PTTL: got %v, want in (0, 1m]", got)
	}
	if err := l.Release(ctx, held[0]); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := l.Release(ctx, held[0]); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release twice: got %v, want ErrNotHeld", err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatalf("acquire the permit released: %v", err)
	}
	// A permit whose score Redis's clock has passed is expired: it can be
	// neither released nor extended, and frees its place.
	rc.ZAdd(ctx, "k", redis.Z{Score: 1, Member: held[1].Token})
	if _, err := l.Extend(ctx, held[1], time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend an expired permit: got %v, want ErrNotHeld", err)
	}
	rc.ZAdd(ctx, "k", redis.Z{Score: 1, Member: held[1].Token})
	if err := l.Release(ctx, held[1]); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release an expired permit: got %v, want ErrNotHeld", err)
	}
	if _, err := l.Extend(ctx, held[2], time.Minute); err != nil {
		t.Errorf("extend a held permit: %v", err)
	}
	rc.ZAdd(ctx, "k", redis.Z{Score: 1, Member: held[2].Token})
	if _, err := l.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatalf("acquire in place of an expired permit: %v", err)
	}
	if n := rc.ZCard(ctx, "k").Val(); n != 2 {
		t.Errorf("permits in the set: got %d, want 2 (the two taken since)", n)
	}
}

func TestSemaphore_BrokenCounter(t *testing.T) {
	ctx := context.Background()
	// The counter's permits never expire, and it gives a permit back to
	// anyone: a holder that never releases keeps it for good.
	l, rc := newSemaphore(t, "broken-semaphore-counter", 2)
	a, err := l.Acquire(ctx, "k", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", time.Millisecond); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire a 3rd of 2 permits: got %v, want ErrNotAcquired", err)
	}
	if got := rc.PTTL(ctx, "k").Val(); got != -1 {
		t.Errorf("counter's PTTL: got %v, want -1 (no expiry: the mistake)", got)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := rc.Get(ctx, "k").Val(); got != "1" {
		t.Errorf("counter after a release: got %q, want 1", got)
	}
}

func TestSemaphore_BrokenCheckAdd(t *testing.T) {
	ctx := context.Background()
	// check-add counts free permits, then adds in a second command: a
	// count that saw k-1 admits whatever was added since.
	l, rc := newSemaphore(t, "broken-semaphore-check-add", 1)
	if _, err := l.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire a 2nd of 1 permit: got %v, want ErrNotAcquired", err)
	}
	if n := rc.ZCard(ctx, "k").Val(); n != 1 {
		t.Errorf("permits: got %d, want 1", n)
	}
}
