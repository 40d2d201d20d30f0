package nemesis

import (
	"context"
	"fmt"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestClockQuorum_ReadsTheMajorityNode: at half-time clock-quorum and
// kill-quorum read, from the node of the bare majority, the leases its
// clock jump expired (expired_by_clock) or its restart dropped
// (lost_at_restart): counted for the leases it held, and 0 when it held
// none.
func TestClockQuorum_ReadsTheMajorityNode(t *testing.T) {
	testutil.RequireRedis(t)
	for _, c := range []struct {
		restart bool
		figure  string
		leases  int
	}{{false, history.ExpiredByClock, 3}, {false, history.ExpiredByClock, 0}, {true, history.LostAtRestart, 3}, {true, history.LostAtRestart, 0}} {
		t.Run(fmt.Sprintf("%s/%d", c.figure, c.leases), func(t *testing.T) {
			ctx := context.Background()
			cl, err := cluster.Up(ctx, cluster.Config{Topology: cluster.Redlock, Nodes: 5, LogDir: t.TempDir(), ClockShim: !c.restart})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Down()
			// The leases: on every node, for 3 s; once the minority is
			// down they are on a bare majority.
			for _, n := range cl.Nodes {
				rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: cl.Password, MaxRetries: -1})
				for i := range c.leases {
					if err := rc.Set(ctx, fmt.Sprintf("lock:%d", i), "t", 3*time.Second).Err(); err != nil {
						t.Fatal(err)
					}
				}
				rc.Close()
			}
			// The jump, 2 TTL, expires them.
			q := &clockQuorum{env: Env{Cluster: cl, TTL: 2 * time.Second, Window: time.Second}, restart: c.restart}
			if _, err := q.Start(ctx, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Fatal(err)
			}
			// Half-time and its restarts: waited for as the count they
			// leave (a busy machine's timer can fire late; Stop before
			// it would cancel half-time), not for the window's length.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				q.mu.Lock()
				counted := q.events != nil
				q.mu.Unlock()
				if counted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("half-time (at %v) counted nothing within a minute", q.env.Window/2)
				}
			}
			if err := q.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			got, counted := q.Events()[c.figure]
			if !counted || got != int64(c.leases) {
				t.Errorf("%s %d (counted %v), want %d", c.figure, got, counted, c.leases)
			}
		})
	}
}
