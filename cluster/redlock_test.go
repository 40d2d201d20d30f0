package cluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestRedlock_Topology: N independent masters, each its own dataset.
func TestRedlock_Topology(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{Topology: cluster.Redlock, Nodes: 5, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Down(); testutil.NoRedisChildren(t) }()
	addrs := c.Addrs()
	if len(addrs) != 5 {
		t.Fatalf("got %d nodes, want 5", len(addrs))
	}
	seen := map[string]bool{}
	for i, a := range addrs {
		if seen[a] {
			t.Fatalf("address %s twice", a)
		}
		seen[a] = true
		rc := redis.NewClient(&redis.Options{Addr: a, Password: c.Password})
		if err := rc.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if role := rc.Do(ctx, "ROLE").Val().([]any)[0]; role != "master" {
			t.Errorf("%s is a %v, want master", a, role)
		}
		rc.Close()
	}
	rc := redis.NewClient(&redis.Options{Addr: addrs[0], Password: c.Password})
	defer rc.Close()
	if v := rc.Get(ctx, "k").Val(); v != "0" {
		t.Errorf("n1 holds k=%s, want 0: the nodes share data", v)
	}
}

// TestClock_ShiftsExpiry: under the clock shim, Redis's key expiry follows
// a jump forward, a jump back and a drift of the node's wall clock.
func TestClock_ShiftsExpiry(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{LogDir: t.TempDir(), ClockShim: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Down(); testutil.NoRedisChildren(t) }()
	n := c.Nodes[0]
	rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password})
	defer rc.Close()
	// ahead is how far the node's TIME is from ours, bracketed by our
	// clock's reads around the call: [lo, hi] holds it however long a
	// busy machine takes to answer.
	ahead := func() (lo, hi time.Duration) {
		before := time.Now()
		srv := rc.Time(ctx).Val()
		return srv.Sub(time.Now()), srv.Sub(before)
	}

	// Forward: a key with 5s to live is gone once the clock jumps 10s.
	rc.Set(ctx, "fwd", 1, 5*time.Second)
	if err := n.Clock.Set(10*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if lo, hi := ahead(); hi < 9*time.Second || lo > 11*time.Second {
		t.Errorf("TIME is %v to %v ahead, want about 10s", lo, hi)
	}
	if rc.Exists(ctx, "fwd").Val() != 0 {
		t.Error("key with 5s TTL survived a 10s jump forward")
	}
	// Back: a key set now lives longer than its TTL once the clock is
	// restored (a jump back of 10s).
	rc.Set(ctx, "back", 1, time.Second)
	if err := n.Clock.Set(0, 0); err != nil {
		t.Fatal(err)
	}
	if ttl := rc.PTTL(ctx, "back").Val(); ttl < 10*time.Second {
		t.Errorf("after a 10s jump back a 1s key has %v left, want about 11s", ttl)
	}
	// Drift: at twice real speed, a 1.5s key is gone after 1s.
	rc.Del(ctx, "back")
	rc.Set(ctx, "drift", 1, 1500*time.Millisecond)
	if err := n.Clock.Set(0, 1e9); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if rc.Exists(ctx, "drift").Val() != 0 {
		t.Errorf("key with 1.5s TTL survived 1s at double speed (offset now %v)", n.Clock.Offset())
	}
	// The node still restarts under the shim.
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx, c.Password); err != nil {
		t.Fatal(err)
	}
	if _, hi := ahead(); hi < time.Second {
		t.Errorf("after a restart the drifted clock is at most %v ahead, want the shift kept (> 1s)", hi)
	}
	dir := n.Dir()
	c.Down()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("node dir %s left behind", dir)
	}
}
