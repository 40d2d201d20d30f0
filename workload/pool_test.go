package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestPool_ConfigErrors: --pool-per-client below 0, or with a shape's
// flags (each client's lock is a mutex's), is one line naming what is
// wrong; alone it is taken.
func TestPool_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{PoolPerClient: -1}, "--pool-per-client -1: want 0"},
		{Config{PoolPerClient: 2, Permits: 3}, "gives each client a mutex of its own"},
		{Config{PoolPerClient: 2, Readers: 0.5}, "gives each client a mutex of its own"},
	} {
		_, err := tc.cfg.WithDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line with %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := (Config{PoolPerClient: 2}).WithDefaults(); err != nil {
		t.Errorf("--pool-per-client 2 alone: %v", err)
	}
}

// TestPool_LockPerClient: with PoolPerClient, the lock is made once a
// client slot, each over a pool of exactly that many connections whose
// clients the fault is given, and a call goes to its client's lock.
func TestPool_LockPerClient(t *testing.T) {
	r := New(Config{Clients: 3, Keys: 1, PoolPerClient: 2}, func() int64 { return 0 }, nil)
	var pools []int
	factory := func(env lockimpl.Env) (lockimpl.Locker, error) {
		pools = append(pools, env.Pool)
		return lockimpl.NewSetNX(lockimpl.Env{Addrs: []string{"127.0.0.1:1"}, Pool: env.Pool, OnClient: env.OnClient}) // never dialled
	}
	l, err := r.pooledFactory(factory, 3)(lockimpl.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer lockimpl.Close(l)
	if len(pools) != 3 || pools[0] != 2 || pools[2] != 2 {
		t.Fatalf("locks made with pools %v, want 3 of 2", pools)
	}
	for s, cs := range r.faults.pools.clients {
		if len(cs) != 1 || cs[0].(*redis.Client).Options().PoolSize != 2 {
			t.Errorf("slot %d: %d clients given to the fault, want 1 with a pool of 2", s, len(cs))
		}
	}
	p := l.(*perClient)
	if p.of(lockimpl.WithClient(context.Background(), 4)) != p.locks[1] || p.of(context.Background()) != p.locks[0] {
		t.Error("a call went to another client's lock")
	}
}
