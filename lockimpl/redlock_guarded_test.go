package lockimpl_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestRedlockGuarded_ClockBackAbstains: two of three nodes jump their
// clocks forward past a live lease (its keys there expire) and come
// back. Their clocks look right again, but the keys they expired stay
// gone: counted at once, they would hand a second client a majority
// while the first lease is valid (clock-quorum under load did). Each
// read its jumped time in a script meanwhile, finds its clock behind it
// now, and abstains for the TTL: the second acquire fails, and succeeds
// once the first lease has run out.
func TestRedlockGuarded_ClockBackAbstains(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartCluster(t, cluster.Config{Topology: cluster.Redlock, Nodes: 3, ClockShim: true})
	e, _ := lockimpl.All().Lookup("redlock-guarded")
	l, err := e.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 4, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lockimpl.Close(l)
	const ttl = 2 * time.Second
	a, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes[:2] {
		if err := n.Clock.Set(3*ttl, 0); err != nil {
			t.Fatal(err)
		}
		// The key is gone there (read, so expired now, not by the next
		// active expiry cycle): the fault's chance.
		rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password})
		left, err := rc.Exists(ctx, "k").Result()
		rc.Close()
		if err != nil || left != 0 {
			t.Fatalf("%s: k still there (%d, %v) 6 s later by its clock", n.Name, left, err)
		}
	}
	// A client meets the jumped nodes (they are not counted: their TIME
	// is not ours), then their clocks come back.
	if _, err := l.Acquire(ctx, "probe", ttl); err == nil {
		t.Error("acquire counted two nodes whose clocks are 6 s ahead")
	}
	for _, n := range c.Nodes[:2] {
		if err := n.Clock.Set(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := l.Acquire(ctx, "k", ttl); err == nil {
		t.Fatalf("a second lease %s on k while %s is valid: the nodes whose clocks came back voted", b.Token, a.Token)
	}
	time.Sleep(ttl + 200*time.Millisecond)
	if _, err := l.Acquire(ctx, "k", ttl); err != nil {
		t.Errorf("acquire after the first lease and the quarantine ran out: %v", err)
	}
}
