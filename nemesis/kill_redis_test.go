package nemesis

import (
	"context"
	"errors"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestKillRedis_LostAtRestart: a node restarted without persistence
// drops the leases it held at the kill that outlive the restart, and
// the window counts them, not one that expires first; of those, the ones
// whose key the restarted node granted again while they would still have
// held it are lost_retaken; with persistence the window counts nothing
// (what the node loads is not read). The heal is marked when the node
// was back, before Stop's wait for grants.
func TestKillRedis_LostAtRestart(t *testing.T) {
	testutil.RequireRedis(t)
	for _, c := range []struct {
		persistence string
		want        int64
		counted     bool
	}{{"none", 2, true}, {"aof-always", 0, false}} {
		t.Run(c.persistence, func(t *testing.T) {
			ctx := context.Background()
			cl, rc := upOne(t, c.persistence)
			for k, ttl := range map[string]time.Duration{"a": 5 * time.Second, "b": 5 * time.Second, "short": 20 * time.Millisecond} {
				if err := rc.Set(ctx, k, "tok-"+k, ttl).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rc.Set(ctx, "no-ttl", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			k := &killRedis{env: Env{Cluster: cl, RestartDelay: 100 * time.Millisecond}}
			// Once the node is back and watched, another client takes a.
			var retakeErr error
			var back time.Time // the node restarted and watched
			k.watching = func() { back = time.Now(); retakeErr = rc.Set(ctx, "a", "v2", time.Second).Err() }
			if _, err := k.Start(ctx, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(k.Hold())
			if err := k.Stop(ctx); err != nil || retakeErr != nil {
				t.Fatal(err, retakeErr)
			}
			stopped := time.Now()
			// Where Stop waited for grants, the heal is marked once the
			// node was back, as the wait began; otherwise none (Stop's
			// return is the heal).
			if healed := k.Healed(); healed.IsZero() == c.counted || (c.counted && (healed.Before(back) || healed.After(stopped))) {
				t.Errorf("healed %v, node back %v, Stop returned %v: want a heal time between them only where grants were awaited (%v)", healed, back, stopped, c.counted)
			}
			if again := k.Healed(); !again.IsZero() {
				t.Errorf("healed %v read a second time, want it reset for the next window", again)
			}
			e := k.Events()
			got, counted := e[history.LostAtRestart]
			if counted != c.counted || got != c.want {
				t.Errorf("lost_at_restart %d (counted %v), want %d (counted %v)", got, counted, c.want, c.counted)
			}
			if retaken, counted := e[history.LostRetaken]; counted != c.counted || (c.counted && retaken != 1) {
				t.Errorf("lost_retaken %d (counted %v), want 1 (a) where lost_at_restart is counted", retaken, counted)
			}
			// The grant comes with the lost lease's token, for the checker
			// to judge against the history.
			if rs := k.Retaken(); c.counted && (len(rs) != 1 || rs[0].Key != "a" || rs[0].Token != "tok-a" || rs[0].At == 0) {
				t.Errorf("retaken %+v, want a, its lost token tok-a and when", rs)
			}
		})
	}
}

// TestKillRedis_UnsyncedAtKill: under appendfsync everysec a kill is the
// host's crash: a lease granted in the second before it is cut from the
// AOF, so the restarted node lacks it, and the window counts it; a lease
// granted before that second survives the restart and is not counted,
// nor one that expires first; a window in which nothing was granted
// counts 0; under appendfsync always nothing is cut and nothing counted.
// The same holds of leases that are members of a key (a semaphore's
// sorted set): the member added in that second is counted, once, and the
// one added before it is not, though the key was written again.
func TestKillRedis_UnsyncedAtKill(t *testing.T) {
	testutil.RequireRedis(t)
	unsyncedAtKill(t, cluster.Local)
}

// TestDocker_UnsyncedAtKill: the same power loss on the docker backend,
// whose nodes keep their data in their host dirs for it.
func TestDocker_UnsyncedAtKill(t *testing.T) {
	testutil.RequireDocker(t)
	unsyncedAtKill(t, cluster.Docker)
}

func unsyncedAtKill(t *testing.T, backend string) {
	for _, c := range []struct {
		name, persistence string
		grant             bool // grant leases in the second before the kill
		want              int64
		counted           bool
	}{{"everysec", "aof-everysec", true, 2, true}, {"everysec-quiet", "aof-everysec", false, 0, true}, {"always", "aof-always", true, 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cl, rc := upOn(t, c.persistence, backend)
			if err := rc.Set(ctx, "old", "t-old", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			// A semaphore's key: members scored by their expiry.
			if err := errors.Join(rc.ZAdd(ctx, "sem", redis.Z{Score: 1, Member: "t-sem-old"}).Err(), rc.PExpire(ctx, "sem", 10*time.Second).Err()); err != nil {
				t.Fatal(err)
			}
			k := &killRedis{env: Env{Cluster: cl, RestartDelay: 100 * time.Millisecond}}
			granted := make(chan error, 1)
			grant := func() {
				var err error
				if c.grant {
					for key, ttl := range map[string]time.Duration{"new": 10 * time.Second, "short": 20 * time.Millisecond} {
						err = errors.Join(err, rc.SetArgs(ctx, key, "t-"+key, redis.SetArgs{Mode: "NX", TTL: ttl}).Err())
					}
					err = errors.Join(err, rc.ZAdd(ctx, "sem", redis.Z{Score: 2, Member: "t-sem-new"}).Err(), rc.PExpire(ctx, "sem", 10*time.Second).Err())
				}
				granted <- err
			}
			if c.persistence == "aof-everysec" {
				// In the second between the mark and the kill.
				k.marked = grant
			} else {
				grant()
			}
			if _, err := k.Start(ctx, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Fatal(err)
			}
			if err := <-granted; err != nil {
				t.Fatal(err)
			}
			time.Sleep(k.Hold())
			if err := k.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			got, counted := k.Events()[history.UnsyncedAtKill]
			if counted != c.counted || got != c.want {
				t.Errorf("unsynced_at_kill %d (counted %v), want %d (counted %v)", got, counted, c.want, c.counted)
			}
			restartLoaded(t, rc, c.persistence == "aof-everysec" || !c.grant)
		})
	}
}

// restartLoaded checks what the restarted node loaded: the grants made
// before the cut, and those of the second before the kill unless cut
// (they were cut, or never made).
func restartLoaded(t *testing.T, rc *redis.Client, cut bool) {
	t.Helper()
	ctx := context.Background()
	if v, err := rc.Get(ctx, "old").Result(); err != nil || v != "t-old" {
		t.Errorf("after the restart, old = %q (%v), want t-old: a grant before the cut survives", v, err)
	}
	wantNew, wantSem := "t-new", []string{"t-sem-old", "t-sem-new"}
	if cut {
		wantNew, wantSem = "", wantSem[:1]
	}
	if v, _ := rc.Get(ctx, "new").Result(); v != wantNew {
		t.Errorf("after the restart, new = %q, want %q", v, wantNew)
	}
	if m, err := rc.ZRange(ctx, "sem", 0, -1).Result(); err != nil || !slices.Equal(m, wantSem) {
		t.Errorf("after the restart, sem holds %q (%v), want %q", m, err, wantSem)
	}
}

// upOne starts one redis-server with persistence, and a client of it;
// both end with the test.
func upOne(t *testing.T, persistence string) (*cluster.Cluster, *redis.Client) {
	return upOn(t, persistence, cluster.Local)
}

// upOn is upOne on backend.
func upOn(t *testing.T, persistence, backend string) (*cluster.Cluster, *redis.Client) {
	cl, err := cluster.Up(context.Background(), cluster.Config{LogDir: t.TempDir(), Persistence: persistence, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Down() })
	rc := redis.NewClient(&redis.Options{Addr: cl.Nodes[0].Addr, Password: cl.Password, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	return cl, rc
}
