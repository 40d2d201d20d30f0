package nemesis

import (
	"context"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestPartition_HealDemotes: a partition's heal on Sentinel turns the
// deposed master into the promoted one's replica at once (left to the
// sentinels, it stayed a master past the rest of a run, and the clients
// that stayed on it never met the heal): a client of the deposed master
// that could write there throughout the split brain is refused (READONLY)
// right after Stop, and a lease the deposed master granted while cut off
// is counted lost at the heal (the promoted master never had it).
func TestPartition_HealDemotes(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	cl, err := cluster.Up(ctx, cluster.Config{LogDir: t.TempDir(), Topology: cluster.Sentinel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Down() })
	old := cl.Nodes[0]
	rc := redis.NewClient(&redis.Options{Addr: old.Addr, Password: cl.Password, MaxRetries: -1})
	defer rc.Close()
	p := &partition{env: Env{Cluster: cl}}
	if _, err := p.Start(ctx, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	// Granted on the deposed side, after the promotion: no replica has it.
	if err := rc.Set(ctx, "lock:cut", "tok-cut", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if lost := p.Events()[history.LostAtHeal]; lost != 1 {
		t.Errorf("lost_at_heal %d, want 1 (lock:cut)", lost)
	}
	err = rc.Set(ctx, "lock:after", "tok", time.Second).Err()
	if err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("a write to the deposed master after the heal: %v, want READONLY (a replica)", err)
	}
}
