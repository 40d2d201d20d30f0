package lockimpl_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestSpec_Reentrant runs examples/specs/reentrant-hash.toml, shape
// "reentrant", against Redis: it is a Reenterer whose re-entry runs its
// [acquire] with the owner's token; two holds take two releases before
// another owner gets the key, and a re-entry by a token that holds
// nothing is refused while another owner holds it.
func TestSpec_Reentrant(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartRedis(t)
	s, err := lockimpl.LoadSpec("../examples/specs/reentrant-hash.toml")
	if err != nil {
		t.Fatal(err)
	}
	if e := lockimpl.SpecEntry(s); e.ShapeName() != lockimpl.ShapeReentrant {
		t.Errorf("entry shape %q, want %q", e.ShapeName(), lockimpl.ShapeReentrant)
	}
	l, rc := lockOn(t, c, s.Factory, nil)
	re, ok := l.(lockimpl.Reenterer)
	if !ok {
		t.Fatal("reentrant-hash.toml: not a Reenterer")
	}
	if m, _ := specLockOn(t, c, goodSpec); func() bool { _, ok := m.(lockimpl.Reenterer); return ok }() {
		t.Fatal("a mutex's spec is a Reenterer")
	}
	a, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := re.Reenter(ctx, a, 30*time.Second)
	if err != nil || a2.Token != a.Token || a2.TTL != 30*time.Second {
		t.Fatalf("re-enter: %+v, %v; want the owner's token with the re-entry's TTL", a2, err)
	}
	if got := rc.HGet(ctx, "k", a.Token).Val(); got != "2" {
		t.Errorf("hold count %q after a re-entry, want 2", got)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another owner while held twice: %v, want ErrNotAcquired", err)
	}
	stranger := lockimpl.Lease{Key: "k", Token: "not-an-owner"}
	if _, err := re.Reenter(ctx, stranger, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("re-entry of a token holding nothing: %v, want ErrNotAcquired", err)
	}
	if err := l.Release(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another owner after the inner release: %v, want ErrNotAcquired (one hold left)", err)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatalf("another owner after both releases: %v", err)
	}
}

// TestSpec_Wait runs examples/specs/setnx-block.toml against Redis: its
// acquire waits (a Waiter with the bound it declares), takes the key
// within a poll of its release, and is refused once its wait ran out; a
// spec without [wait] is no Waiter, and a [wait] or [reenter] a spec
// cannot have is refused in one line.
func TestSpec_Wait(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartRedis(t)
	s, err := lockimpl.LoadSpec("../examples/specs/setnx-block.toml")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := lockOn(t, c, s.Factory, nil)
	w, ok := lockimpl.WaiterOf(l)
	if !ok || w.WakeBound() != time.Second {
		t.Fatalf("setnx-block.toml: Waiter %v, bound %v; want a Waiter with a 1 s bound", ok, w.WakeBound())
	}
	if m, _ := specLockOn(t, c, goodSpec); func() bool { _, ok := lockimpl.WaiterOf(m); return ok }() {
		t.Fatal("a spec without [wait] is a Waiter")
	}
	held, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := w.AcquireWait(ctx, "k", time.Minute, 150*time.Millisecond); !errors.Is(err, lockimpl.ErrNotAcquired) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("wait on a held key: %v after %v; want ErrNotAcquired once the 150 ms ran out", err, time.Since(start))
	}
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		if err := l.Release(ctx, held); err != nil {
			t.Error(err)
		}
		released <- time.Now()
	}()
	// The wait is long, so that a loaded machine's late sleep cannot
	// end it: what is asserted is the order, the key taken after its
	// release.
	got, err := w.AcquireWait(ctx, "k", time.Minute, 30*time.Second)
	took := time.Now()
	if err != nil || got.Token == held.Token {
		t.Fatalf("wait for a key released meanwhile: %+v, %v", got, err)
	}
	if at := <-released; took.Before(at) {
		t.Errorf("the waiter took the key at %v, before its release at %v", took, at)
	}

	for _, tc := range []struct{ name, src, want string }{
		{"empty reenter", strings.Replace(goodSpec, `name = "t"`, "name = \"t\"\nshape = \"reentrant\"", 1) + "\n[reenter]\nscript = ''\nkeys = [\"{key}\"]\nargs = [\"{token}\"]\n", `[reenter] has no script`},
		{"reenter in a mutex", goodSpec + "\n[reenter]\nscript = 'return 1'\nkeys = [\"{key}\"]\nargs = [\"{token}\"]\n", `[reenter] is a reentrant lock's`},
		{"no poll", goodSpec + "\n[wait]\nwake_bound_ms = 100\n", `[wait] poll_ms 0`},
		{"bound too long", goodSpec + "\n[wait]\npoll_ms = 10\nwake_bound_ms = 9999999\n", `wake_bound_ms 9999999`},
	} {
		_, err := lockimpl.LoadSpec(writeSpec(t, tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line containing %q", tc.name, err, tc.want)
		}
	}
}
