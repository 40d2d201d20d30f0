package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestRedlock_Quorum runs redlock and redsync against five real masters:
// a lock is held on a majority, survives two nodes down, and is not
// granted when a majority is down.
func TestRedlock_Quorum(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{Topology: cluster.Redlock, Nodes: 5, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Down(); testutil.NoRedisChildren(t) })
	env := lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 10, OpTimeout: time.Second}
	holders := func(key, token string) int {
		n := 0
		for _, a := range c.Addrs() {
			rc := redis.NewClient(&redis.Options{Addr: a, Password: c.Password, MaxRetries: -1})
			if rc.Get(ctx, key).Val() == token {
				n++
			}
			rc.Close()
		}
		return n
	}
	for _, name := range []string{"redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			e, _ := lockimpl.All().Lookup(name)
			if e.Topology != cluster.Redlock {
				t.Fatalf("%s registered for topology %q, want redlock", name, e.Topology)
			}
			l, err := e.Factory(env)
			if err != nil {
				t.Fatal(err)
			}
			defer l.(lockimpl.Closer).Close()
			key := "k-" + name
			called := time.Now()
			a, err := l.Acquire(ctx, key, 2*time.Second)
			took := time.Since(called)
			if err != nil {
				t.Fatal(err)
			}
			if n := holders(key, a.Token); n != 5 {
				t.Errorf("token on %d nodes, want 5", n)
			}
			// The TTL less the drift (1% + 2 ms) and the time the
			// acquire took, which our clock bounds around it.
			if d, most := a.Deadline()-a.Acquired, 2*time.Second-22*time.Millisecond; d >= 2*time.Second || d < most-took {
				t.Errorf("lease validity %v, want 2s less drift (1%% + 2ms) and the elapsed time, at most the %v the acquire took", d, took)
			}
			// Refused on every node; still "undone", not "held by another":
			// a Redlock failure cannot tell a holder from a split vote.
			if _, err := l.Acquire(ctx, key, 2*time.Second); !errors.Is(err, lockimpl.ErrUndone) {
				t.Errorf("acquire held: got %v, want ErrUndone", err)
			}
			if _, err := l.Extend(ctx, a, 2*time.Second); err != nil {
				t.Errorf("extend: %v", err)
			}
			if err := l.Release(ctx, a); err != nil {
				t.Errorf("release: %v", err)
			}
			if n := holders(key, a.Token); n != 0 {
				t.Errorf("token still on %d nodes after release", n)
			}
		})
	}
	// Two of five down: a majority is still reachable.
	l, err := lockimpl.NewRedlock(env)
	if err != nil {
		t.Fatal(err)
	}
	defer l.(lockimpl.Closer).Close()
	for _, n := range c.Nodes[3:] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	a, err := l.Acquire(ctx, "q", time.Second)
	if err != nil {
		t.Fatalf("acquire with 3 of 5 up: %v", err)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Errorf("release with 3 of 5 up: %v", err)
	}
	// Three down: no majority; the refused nodes are a definite no, so
	// the attempt is undone rather than indeterminate.
	if err := c.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "q", time.Second); !errors.Is(err, lockimpl.ErrUndone) {
		t.Errorf("acquire with 2 of 5 up: got %v, want ErrUndone", err)
	}
}
