package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestReaders_ConfigErrors: --readers out of range, with --permits, or
// on a lock that is not a read-write lock is one line naming what is
// wrong; a read-write lock takes it, and 0 takes any lock.
func TestReaders_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Readers: 1.5}, "--readers 1.5: want a fraction from 0"},
		{Config{Readers: -0.1}, "--readers -0.1: want a fraction from 0"},
		{Config{Readers: 0.5, Permits: 3}, "--readers 0.5 with --permits 3: a run has one shape"},
	} {
		_, err := tc.cfg.WithDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line with %q", tc.cfg, err, tc.want)
		}
	}
	env := lockimpl.Env{Addrs: []string{"127.0.0.1:1"}} // never dialled: no command is sent
	setnx, err := lockimpl.NewSetNX(env)
	if err != nil {
		t.Fatal(err)
	}
	defer lockimpl.Close(setnx)
	rw, err := lockimpl.NewRWLock(env)
	if err != nil {
		t.Fatal(err)
	}
	defer lockimpl.Close(rw)
	if err := readersIn(setnx, "setnx", 0.5); err == nil || !strings.Contains(err.Error(), "lock setnx is not a read-write lock: --readers 0.5 needs one") {
		t.Errorf("setnx at --readers 0.5: got %v, want it refused as no read-write lock", err)
	}
	if err := readersIn(setnx, "setnx", 0); err != nil {
		t.Errorf("setnx at --readers 0: %v", err)
	}
	if err := readersIn(rw, "rwlock", 0.5); err != nil {
		t.Errorf("rwlock at --readers 0.5: %v", err)
	}
}

// TestReaders_DrawAccess: a mutex's run draws no mode; a run of readers
// tags each acquire's context with the mode it records, reads about as
// often as asked (all of them at 1).
func TestReaders_DrawAccess(t *testing.T) {
	c := newClient(Config{Seed: 1}, 0)
	r := &Runner{cfg: Config{}}
	ctx, access := r.drawAccess(context.Background(), c)
	if access != "" || lockimpl.AccessOf(ctx) != history.AccessWrite {
		t.Errorf("--readers 0: access %q, context's %q; want none, and a write", access, lockimpl.AccessOf(ctx))
	}
	for _, f := range []float64{0.5, 1} {
		r.cfg.Readers = f
		reads := 0
		for range 1000 {
			ctx, access := r.drawAccess(context.Background(), c)
			if lockimpl.AccessOf(ctx) != access {
				t.Fatalf("--readers %v: drew %q, context says %q", f, access, lockimpl.AccessOf(ctx))
			}
			if access == history.AccessRead {
				reads++
			}
		}
		if f == 1 && reads != 1000 || f == 0.5 && (reads == 0 || reads == 1000) {
			t.Errorf("--readers %v: %d reads of 1000 draws", f, reads)
		}
	}
}

// TestReaders_StartSpread: a read-write lock's clients start a mean hold
// apart on each key (client id x hold / keys), so that no start-up burst
// of readers meets its first writer at once, within the run's first
// quarter; a mutex's start together.
func TestReaders_StartSpread(t *testing.T) {
	rw := &Runner{cfg: Config{Readers: 0.5, Hold: 10 * time.Millisecond, Keys: 5, Clients: 100}}
	mutex := &Runner{cfg: Config{Hold: 10 * time.Millisecond, Keys: 5, Clients: 100}}
	long := &Runner{cfg: Config{Readers: 0.5, Hold: 3 * time.Second, Keys: 5, Clients: 20, Duration: 8 * time.Second}}
	for _, tc := range []struct {
		r    *Runner
		id   int
		want time.Duration
	}{
		{rw, 0, 0}, {rw, 5, 10 * time.Millisecond}, {rw, 99, 198 * time.Millisecond},
		{mutex, 0, 0}, {mutex, 99, 0},
		{long, 19, 19 * 100 * time.Millisecond}, // 8 s / (4 x 20), not 3 s / 5 a client
	} {
		if got := tc.r.startAfter(tc.id); got != tc.want {
			t.Errorf("readers %v, client %d: starts after %v, want %v", tc.r.cfg.Readers, tc.id, got, tc.want)
		}
	}
}
