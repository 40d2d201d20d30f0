package lockimpl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

func newLock(t *testing.T, name string, rec func(history.Op)) (lockimpl.Locker, *redis.Client) {
	t.Helper()
	c := testutil.StartRedis(t)
	e, err := lockimpl.All().Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return lockOn(t, c, e.Factory, rec)
}

// lockOn builds a lock on c, and a plain client to look at its keys; both
// are closed when the test ends.
func lockOn(t *testing.T, c *cluster.Cluster, f lockimpl.Factory, rec func(history.Op)) (lockimpl.Locker, *redis.Client) {
	t.Helper()
	l, err := f(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 10, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.(lockimpl.Closer).Close() })
	rc := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], Password: c.Password})
	t.Cleanup(func() { rc.Close() })
	return l, rc
}

func TestSetNX_Semantics(t *testing.T) {
	ctx := context.Background()
	l, rc := newLock(t, "setnx", nil)
	called := time.Now()
	a, err := l.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil {
		t.Fatalf("acquire free key: %v", err)
	}
	if len(a.Token) != 32 {
		t.Errorf("token %q: got %d hex chars, want 32 (128 bits)", a.Token, len(a.Token))
	}
	if _, err := l.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire held key: got %v, want ErrNotAcquired", err)
	}
	// At most the TTL, and no less than what is left of it by our clock
	// (PTTL's milliseconds rounded down; a loaded machine may read it
	// past the TTL: the refusal above showed the key held).
	if got, left := rc.PTTL(ctx, "k").Val(), 300*time.Millisecond-time.Since(called); got > 300*time.Millisecond || left > 0 && got < left-time.Millisecond {
		t.Errorf("PTTL after acquire: got %v, want at most 300ms and at least the %v left of it since the acquire's call", got, left)
	}
	// Someone else's token can neither release nor extend.
	other := a
	other.Token = lockimpl.NewToken()
	if err := l.Release(ctx, other); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release with foreign token: got %v, want ErrNotHeld", err)
	}
	if _, err := l.Extend(ctx, other, time.Second); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend with foreign token: got %v, want ErrNotHeld", err)
	}
	// Extend resets the TTL; the script cache may be flushed (NOSCRIPT).
	rc.ScriptFlush(ctx)
	called = time.Now()
	if _, err := l.Extend(ctx, a, 5*time.Second); err != nil {
		t.Fatalf("extend own lease after SCRIPT FLUSH: %v", err)
	}
	if got, left := rc.PTTL(ctx, "k").Val(), 5*time.Second-time.Since(called); got > 5*time.Second || got < left-time.Millisecond {
		t.Errorf("PTTL after extend to 5s: got %v, want at most 5s and at least the %v left of it since the extend's call", got, left)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatalf("release own lease: %v", err)
	}
	if err := l.Release(ctx, a); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("second release: got %v, want ErrNotHeld", err)
	}
	// Redis expires the key: a lease is a lease.
	if _, err := l.Acquire(ctx, "e", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(120 * time.Millisecond)
	if _, err := l.Acquire(ctx, "e", time.Second); err != nil {
		t.Errorf("acquire after TTL expired: got %v, want success", err)
	}
}

// TestSetNX_MutualExclusion: many goroutines racing for one key; Redis's
// SET NX lets exactly one win each round.
func TestSetNX_MutualExclusion(t *testing.T) {
	ctx := context.Background()
	l, _ := newLock(t, "setnx", nil)
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var wins []lockimpl.Lease
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if le, err := l.Acquire(ctx, "race", time.Second); err == nil {
					mu.Lock()
					wins = append(wins, le)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, len(wins))
		}
		if err := l.Release(ctx, wins[0]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWatchdog_KeepsLeaseAndRecordsExtends(t *testing.T) {
	ctx := lockimpl.WithClient(context.Background(), 7)
	var mu sync.Mutex
	var ops []history.Op
	l, rc := newLock(t, "watchdog", func(op history.Op) { mu.Lock(); ops = append(ops, op); mu.Unlock() })
	// A TTL a loaded machine's watchdog keeps (it extends every TTL/3:
	// a stall of 600 ms between two is survived), held over 3 TTLs.
	a, err := l.Acquire(ctx, "w", 900*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if a.Watch == nil {
		t.Fatal("watchdog lease has no Watch")
	}
	time.Sleep(3 * time.Second) // > 3 TTLs
	if v := rc.Get(ctx, "w").Val(); v != a.Token {
		t.Fatalf("after 3 TTLs the key holds %q, want the lease token: the watchdog did not extend", v)
	}
	if a.Deadline() <= a.Acquired+a.TTL {
		t.Errorf("deadline %v did not move past the first TTL %v", a.Deadline(), a.Acquired+a.TTL)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(ops)
	for _, op := range ops {
		if op.F != history.Extend || op.Type != history.OK || op.Process != 7 || op.Token != a.Token {
			t.Errorf("recorded op %+v: want an ok extend by p7 of the lease", op)
		}
	}
	mu.Unlock()
	if n < 2 {
		t.Errorf("recorded %d extends in 3 s at TTL/3 = 300ms, want several", n)
	}
}

func TestWatchdog_LostWhenKeyTaken(t *testing.T) {
	ctx := context.Background()
	l, rc := newLock(t, "watchdog", nil)
	a, err := l.Acquire(ctx, "w", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rc.Set(ctx, "w", "intruder", 0)
	select {
	case <-a.Watch.Lost():
	case <-time.After(30 * time.Second): // the watchdog's next extend (50 ms) finds it, on a loaded machine too
		t.Fatal("lease not marked lost within 30 s after another owner took the key")
	}
	_ = l.Release(ctx, a)
}

// TestBroken_Mistakes shows, against Redis, the exact flaw of each mistake.
func TestBroken_Mistakes(t *testing.T) {
	ctx := context.Background()
	t.Run("del-release deletes the next holder's lock", func(t *testing.T) {
		l, rc := newLock(t, "broken-del-release", nil)
		a, _ := l.Acquire(ctx, "k", 50*time.Millisecond)
		time.Sleep(80 * time.Millisecond)
		b, err := l.Acquire(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, a); err != nil {
			t.Fatalf("late release: %v (the mistake returns ok)", err)
		}
		if rc.Exists(ctx, "k").Val() != 0 {
			t.Errorf("b's lock survived a's late release; want it deleted")
		}
		_ = b
	})
	t.Run("fixed-value releases anyone's lock", func(t *testing.T) {
		l, rc := newLock(t, "broken-fixed-value", nil)
		a, _ := l.Acquire(ctx, "k", 50*time.Millisecond)
		time.Sleep(80 * time.Millisecond)
		if _, err := l.Acquire(ctx, "k", time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, a); err != nil || rc.Exists(ctx, "k").Val() != 0 {
			t.Errorf("late release of a: err %v, key exists %d; want ok and deleted", err, rc.Exists(ctx, "k").Val())
		}
	})
	t.Run("no-ttl never expires", func(t *testing.T) {
		l, rc := newLock(t, "broken-no-ttl", nil)
		if _, err := l.Acquire(ctx, "k", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if ttl := rc.PTTL(ctx, "k").Val(); ttl != -1 {
			t.Errorf("PTTL %v, want -1 (no expiry)", ttl)
		}
	})
	t.Run("setnx-expire sets the TTL in a second step", func(t *testing.T) {
		l, rc := newLock(t, "broken-setnx-expire", nil)
		if _, err := l.Acquire(ctx, "k", time.Minute); err != nil { // a minute: not run out by the PTTL on a loaded machine
			t.Fatal(err)
		}
		if ttl := rc.PTTL(ctx, "k").Val(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("PTTL %v, want in (0, 1m]", ttl)
		}
	})
	t.Run("check-then-set overwrites without NX", func(t *testing.T) {
		l, _ := newLock(t, "broken-check-then-set", nil)
		if _, err := l.Acquire(ctx, "k", time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Errorf("sequential second acquire: got %v, want ErrNotAcquired (the race needs concurrency)", err)
		}
	})
}

// TestSetNXWait_WaitsForTheReplica: with the replication stream delayed by
// 300ms, no acquire returns before a replica has its key, even with many
// clients sharing the pool. WAIT covers only its own connection's writes:
// sent on another pooled connection, whose earlier writes were acknowledged
// long ago, it would return at once.
func TestSetNXWait_WaitsForTheReplica(t *testing.T) {
	ctx := context.Background()
	c := laggingSentinel(t)
	l, err := lockimpl.NewSetNXWait(lockimpl.Env{Sentinels: c.SentinelAddrs(), MasterName: cluster.MasterName,
		Password: c.Password, DialAddr: c.DialAddr, OpTimeout: 2 * time.Second, PoolSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer l.(lockimpl.Closer).Close()
	const clients = 40
	var mu sync.Mutex
	var early []time.Duration
	var leases []lockimpl.Lease
	// Round 0 gives every pooled connection writes that are then long
	// acknowledged; round 1 is measured.
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				lease, err := l.Acquire(ctx, fmt.Sprintf("k%d-%d", round, i), 10*time.Second)
				took := time.Since(start)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if round == 1 {
					leases = append(leases, lease)
					if took < 250*time.Millisecond {
						early = append(early, took)
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(time.Second) // every write of this round acknowledged
	}
	if len(early) > 0 {
		t.Errorf("%d of %d acquires returned before the 300ms-late replicas could acknowledge (%v)", len(early), clients, early)
	}
	// WAIT 1: each key is on at least one of the two replicas.
	var missing int
	for _, lease := range leases {
		on := false
		for _, n := range c.Nodes[1:] {
			replica := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password})
			on = on || replica.Get(ctx, lease.Key).Val() == lease.Token
			replica.Close()
		}
		if !on {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d keys on no replica after their acquire returned", missing)
	}
}

// TestSetNXWaitAll_EveryReplica: with the replication stream 300 ms
// late, setnx-wait-all's acquire and release return done only once both
// replicas have their effect; with a wait shorter than the lag they are
// indeterminate (not done, not refused), where broken-wait-ignored
// (Redisson #3994) returns a lease no replica has.
func TestSetNXWaitAll_EveryReplica(t *testing.T) {
	ctx := context.Background()
	c := laggingSentinel(t)
	onReplicas := func(key string) (n int) {
		for _, node := range c.Nodes[1:] {
			replica := redis.NewClient(&redis.Options{Addr: node.Addr, Password: c.Password})
			if replica.Exists(ctx, key).Val() == 1 {
				n++
			}
			replica.Close()
		}
		return n
	}
	build := func(name string, opTimeout time.Duration) lockimpl.Locker {
		e, err := lockimpl.All().Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.Factory(lockimpl.Env{Sentinels: c.SentinelAddrs(), MasterName: cluster.MasterName,
			Password: c.Password, DialAddr: c.DialAddr, OpTimeout: opTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.(lockimpl.Closer).Close() })
		return l
	}
	// A wait of up to 1 s (half the op timeout) outlasts the lag.
	l := build("setnx-wait-all", 2*time.Second)
	lease, err := l.Acquire(ctx, "synced", 10*time.Second)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if n := onReplicas("synced"); n != 2 {
		t.Errorf("acquire returned done with the key on %d of 2 replicas", n)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := onReplicas("synced"); n != 0 {
		t.Errorf("release returned done with the key still on %d replicas", n)
	}
	// A wait of 100 ms (half the 200 ms op timeout) does not.
	short := build("setnx-wait-all", 200*time.Millisecond)
	lease, err = short.Acquire(ctx, "unsynced", 10*time.Second)
	if err == nil || errors.Is(err, lockimpl.ErrNotAcquired) || lease.Token == "" {
		t.Errorf("acquire with a wait shorter than the lag: %v (token %q), want an indeterminate error with the lease's token", err, lease.Token)
	}
	// The same wait, its reply ignored: a lease granted all the same.
	ignored := build("broken-wait-ignored", 200*time.Millisecond)
	if _, err := ignored.Acquire(ctx, "ignored", 10*time.Second); err != nil {
		t.Errorf("broken-wait-ignored acquire with a wait shorter than the lag: %v, want a lease", err)
	}
}

// laggingSentinel is the sentinel topology with its replication stream
// 300 ms late, stopped at the test's end.
func laggingSentinel(t *testing.T) *cluster.Cluster {
	t.Helper()
	testutil.RequireRedis(t)
	c, err := cluster.Up(context.Background(), cluster.Config{Topology: cluster.Sentinel, LogDir: t.TempDir(), ReplicationLag: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Down() })
	return c
}

func TestMain(m *testing.M) {
	testutil.QuietRedis()
	os.Exit(m.Run())
}
