package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// newRWLock builds the read-write lock name on a Redis of its own.
func newRWLock(t *testing.T, name string) (lockimpl.ReadWriter, lockimpl.Locker, *redis.Client) {
	t.Helper()
	l, rc := newSemaphore(t, name, 0)
	rw, ok := lockimpl.ReadWriterOf(l)
	if !ok {
		t.Fatalf("%s is not a ReadWriter", name)
	}
	return rw, l, rc
}

func TestRWLock_Semantics(t *testing.T) {
	ctx := context.Background()
	rw, l, rc := newRWLock(t, "rwlock")
	if rw.WritersPreferred() {
		t.Errorf("rwlock declares writer preference; it has none")
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, "exclusive"); err == nil || errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire in a mode it lacks: got %v, want a bad call", err)
	}
	r1, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead)
	if err != nil {
		t.Fatalf("first reader: %v", err)
	}
	r2, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead)
	if err != nil {
		t.Fatalf("second reader beside the first: %v", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("writer while readers hold: got %v, want ErrNotAcquired", err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire (a write) while readers hold: got %v, want ErrNotAcquired", err)
	}
	r3, err := l.Acquire(lockimpl.WithAccess(ctx, history.AccessRead), "k", time.Minute)
	if err != nil {
		t.Fatalf("Acquire in the read mode its context names, beside readers: %v", err)
	}
	if err := l.Release(ctx, r3); err != nil {
		t.Fatalf("release the reader Acquire took: %v", err)
	}
	if got := rc.PTTL(ctx, "k").Val(); got <= 0 || got > time.Minute {
		t.Errorf("PTTL: got %v, want in (0, 1m]", got)
	}
	if err := l.Release(ctx, r1); err != nil {
		t.Fatalf("release a reader: %v", err)
	}
	if err := l.Release(ctx, r1); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release a reader twice: got %v, want ErrNotHeld", err)
	}
	// A lease whose score Redis's clock has passed is expired: it can be
	// neither released nor extended, and no longer keeps a writer out.
	rc.ZAdd(ctx, "k", redis.Z{Score: 1, Member: r2.Token})
	if _, err := l.Extend(ctx, r2, time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend an expired reader: got %v, want ErrNotHeld", err)
	}
	w, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite)
	if err != nil {
		t.Fatalf("writer once the readers are gone: %v", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("reader while a writer holds: got %v, want ErrNotAcquired", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("second writer: got %v, want ErrNotAcquired", err)
	}
	if _, err := l.Extend(ctx, w, 2*time.Minute); err != nil {
		t.Fatalf("extend the writer: %v", err)
	}
	if got := rc.PTTL(ctx, "k").Val(); got <= time.Minute {
		t.Errorf("PTTL after extending the writer by 2m: got %v, want over 1m", got)
	}
	if err := l.Release(ctx, w); err != nil {
		t.Fatalf("release the writer: %v", err)
	}
	if err := l.Release(ctx, w); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release the writer twice: got %v, want ErrNotHeld", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead); err != nil {
		t.Fatalf("reader once the writer is gone: %v", err)
	}
}

// Each broken variant is granted exactly where its mistake lets it, and
// refused where rwlock is.
func TestRWLock_BrokenVariants(t *testing.T) {
	ctx := context.Background()
	t.Run("writer-ignores-readers", func(t *testing.T) {
		rw, _, _ := newRWLock(t, "broken-rwlock-writer-ignores-readers")
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead); err != nil {
			t.Fatal(err)
		}
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); err != nil {
			t.Fatalf("writer over a reader: got %v, want granted (the mistake)", err)
		}
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second writer: got %v, want ErrNotAcquired (it does check for a writer)", err)
		}
	})
	t.Run("readers-ignore-writer", func(t *testing.T) {
		rw, _, _ := newRWLock(t, "broken-rwlock-readers-ignore-writer")
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); err != nil {
			t.Fatal(err)
		}
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead); err != nil {
			t.Fatalf("reader over a writer: got %v, want granted (the mistake)", err)
		}
		if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("writer over a writer and a reader: got %v, want ErrNotAcquired", err)
		}
	})
}
