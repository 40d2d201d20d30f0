package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// reenter re-enters l's owner on lk, which must be a Reenterer.
func reenter(t *testing.T, lk lockimpl.Locker, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	t.Helper()
	re, ok := lk.(lockimpl.Reenterer)
	if !ok {
		t.Fatalf("%T is no Reenterer", lk)
	}
	return re.Reenter(context.Background(), l, ttl)
}

// TestReentrant_Semantics: against Redis, the owner re-enters (its hold
// count 2 in the hash, the key's TTL set anew by the re-entry), another
// owner is refused, each release takes one hold away and the key is gone
// at none; a re-entry on a key that had gone starts a count of 1; a
// release or extend of a lease not held fails.
func TestReentrant_Semantics(t *testing.T) {
	ctx := context.Background()
	lk, rc := newLock(t, "reentrant", nil)
	a, err := lk.Acquire(ctx, "k", 2*time.Second)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	a2, err := reenter(t, lk, a, time.Minute)
	if err != nil || a2.Token != a.Token || a2.TTL != time.Minute {
		t.Fatalf("re-enter: got %+v, %v; want the owner's token with the re-entry's TTL", a2, err)
	}
	if n := rc.HGet(ctx, "k", a.Token).Val(); n != "2" {
		t.Errorf("holds after a re-entry: got %q, want 2", n)
	}
	if got := rc.PTTL(ctx, "k").Val(); got <= 2*time.Second {
		t.Errorf("PTTL after a re-entry of 1m: got %v, want past the first acquire's 2s", got)
	}
	if _, err := lk.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("another owner's acquire: got %v, want ErrNotAcquired", err)
	}
	if _, err := lk.Extend(ctx, lockimpl.Lease{Key: "k", Token: "stranger"}, time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("a stranger's extend: got %v, want ErrNotHeld", err)
	}
	if err := lk.Release(ctx, a2); err != nil {
		t.Fatalf("inner release: %v", err)
	}
	if n := rc.HGet(ctx, "k", a.Token).Val(); n != "1" {
		t.Errorf("holds after the inner release: got %q, want 1 (the key still the owner's)", n)
	}
	if _, err := lk.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("another owner's acquire under the outer section: got %v, want ErrNotAcquired", err)
	}
	if err := lk.Release(ctx, a); err != nil {
		t.Fatalf("outer release: %v", err)
	}
	if rc.Exists(ctx, "k").Val() != 0 {
		t.Errorf("key after the last release: still there, want gone")
	}
	if err := lk.Release(ctx, a); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("a release past the last hold: got %v, want ErrNotHeld", err)
	}
	// The key gone (as on expiry): a re-entry is a new lease of one hold.
	if _, err := reenter(t, lk, a, time.Minute); err != nil {
		t.Fatalf("re-enter on a key gone: %v", err)
	}
	if n := rc.HGet(ctx, "k", a.Token).Val(); n != "1" {
		t.Errorf("holds after a re-entry on a key gone: got %q, want 1", n)
	}
}

// TestReentrant_BrokenVariants: broken-reentrant-release-deletes frees
// the key at the inner release, so another owner is granted under the
// outer section; broken-reentrant-no-owner-check refuses another owner's
// acquire but re-enters an owner whose lease had gone into the key the
// next owner holds.
func TestReentrant_BrokenVariants(t *testing.T) {
	ctx := context.Background()
	t.Run("release-deletes", func(t *testing.T) {
		lk, rc := newLock(t, "broken-reentrant-release-deletes", nil)
		a, err := lk.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		a2, err := reenter(t, lk, a, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx, a2); err != nil {
			t.Fatal(err)
		}
		if rc.Exists(ctx, "k").Val() != 0 {
			t.Fatalf("key after the inner release: still there, want gone (the mistake)")
		}
		if _, err := lk.Acquire(ctx, "k", time.Minute); err != nil {
			t.Errorf("another owner under the outer section: got %v, want granted (the mistake)", err)
		}
	})
	t.Run("no-owner-check", func(t *testing.T) {
		lk, rc := newLock(t, "broken-reentrant-no-owner-check", nil)
		a, err := lk.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lk.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("another owner's acquire: got %v, want ErrNotAcquired (acquire is checked)", err)
		}
		rc.Del(ctx, "k") // a's lease gone (as on expiry), and b takes the key
		if _, err := lk.Acquire(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := reenter(t, lk, a, time.Minute); err != nil {
			t.Fatalf("a's re-entry on b's key: got %v, want granted (the mistake)", err)
		}
		if n := rc.HLen(ctx, "k").Val(); n != 2 {
			t.Errorf("owners in the hash: got %d, want 2", n)
		}
	})
}
