package lockimpl_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestSteady_SkipsHealthCheck: go-redis checks a pooled connection before
// each command and dials anew when Redis has closed it; a Steady client
// (a fault-free run on a Redis the harness started) skips that check, so
// the command meets the dead connection and fails. Both against a real
// redis-server whose CLIENT KILL closes the lock's connections.
func TestSteady_SkipsHealthCheck(t *testing.T) {
	c := testutil.StartRedis(t)
	e, err := lockimpl.All().Lookup("setnx")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], Password: c.Password})
	defer rc.Close()
	for _, steady := range []bool{false, true} {
		key := fmt.Sprintf("steady-%v", steady)
		l, err := e.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 1, Steady: steady})
		if err != nil {
			t.Fatal(err)
		}
		a, err := l.Acquire(ctx, key, time.Second)
		if err != nil {
			t.Fatalf("steady %v: acquire: %v", steady, err)
		}
		if err := l.Release(ctx, a); err != nil {
			t.Fatalf("steady %v: release: %v", steady, err)
		}
		if n, err := rc.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result(); err != nil || n < 1 {
			t.Fatalf("CLIENT KILL: %d killed, %v", n, err)
		}
		time.Sleep(50 * time.Millisecond) // the FIN arrives
		_, err = l.Acquire(ctx, key, time.Second)
		switch {
		case !steady && err != nil:
			t.Errorf("health-checked client after CLIENT KILL: %v, want a fresh connection and the lock", err)
		case steady && err == nil:
			t.Errorf("steady client after CLIENT KILL: acquired, want the dead pooled connection's error (no health check)")
		}
		t.Logf("steady %v: acquire after CLIENT KILL: %v", steady, err)
		_ = l.(lockimpl.Closer).Close()
	}
}

// BenchmarkSetNX_Pair is setnx's acquire+release pair from 50 goroutines
// on one redis-server, with go-redis's pool health check (the default)
// and without it (Steady), side by side: what Steady saves per pair.
func BenchmarkSetNX_Pair(b *testing.B) {
	c := testutil.StartRedis(b)
	e, err := lockimpl.All().Lookup("setnx")
	if err != nil {
		b.Fatal(err)
	}
	for _, steady := range []bool{false, true} {
		b.Run(fmt.Sprintf("steady=%v", steady), func(b *testing.B) {
			l, err := e.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 64, Steady: steady})
			if err != nil {
				b.Fatal(err)
			}
			defer l.(lockimpl.Closer).Close()
			b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0))) // 50 goroutines (-cpu 1 or 2)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				key := fmt.Sprintf("pair-%d", next.Add(1))
				for pb.Next() {
					a, err := l.Acquire(ctx, key, time.Second)
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Release(ctx, a); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
