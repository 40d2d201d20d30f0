package nemesis

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestKillRedis_LostAtRestart: a node restarted without persistence
// drops the leases it held at the kill that outlive the restart, and
// the window counts them, not one that expires first; with persistence
// the window counts nothing (what the node loads is not read).
func TestKillRedis_LostAtRestart(t *testing.T) {
	testutil.RequireRedis(t)
	for _, c := range []struct {
		persistence string
		want        int64
		counted     bool
	}{{"none", 2, true}, {"aof-always", 0, false}} {
		t.Run(c.persistence, func(t *testing.T) {
			ctx := context.Background()
			cl, err := cluster.Up(ctx, cluster.Config{LogDir: t.TempDir(), Persistence: c.persistence})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Down()
			rc := redis.NewClient(&redis.Options{Addr: cl.Nodes[0].Addr, Password: cl.Password, MaxRetries: -1})
			defer rc.Close()
			for k, ttl := range map[string]time.Duration{"a": 5 * time.Second, "b": 5 * time.Second, "short": 20 * time.Millisecond} {
				if err := rc.Set(ctx, k, "v", ttl).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rc.Set(ctx, "no-ttl", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			k := &killRedis{env: Env{Cluster: cl, RestartDelay: 100 * time.Millisecond}}
			if _, err := k.Start(ctx, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(k.Hold())
			if err := k.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			got, counted := k.Events()[LostAtRestart]
			if counted != c.counted || got != c.want {
				t.Errorf("lost_at_restart %d (counted %v), want %d (counted %v)", got, counted, c.want, c.counted)
			}
		})
	}
}
