package battery

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ctxwait"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// bareLoopAt is bareLoop at GOMAXPROCS procs (0: as it is), on the
// cell's node emptied first (the cell's run left its keys) and after.
func bareLoopAt(ctx context.Context, cfg BenchConfig, cl *cluster.Cluster, lock string, w workload.Config, procs int) (float64, error) {
	rc := nodeClient(cl)
	defer rc.Close()
	if err := rc.FlushAll(ctx).Err(); err != nil {
		return 0, err
	}
	if procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	}
	// Each side of a round starts from a collected heap: the check
	// before a bare loop leaves garbage whose collection would fall in
	// one side or the other by chance.
	runtime.GC()
	rate, err := bareLoop(ctx, cfg, cl, lock, w)
	if err != nil {
		return 0, err
	}
	return rate, rc.FlushAll(ctx).Err()
}

// bareLoop is the cell's second baseline: the lock's own code, built as
// a run builds it, driven by a bare loop of the cell's clients on its
// keys for its duration (acquire; hold the mean hold; release; think),
// with no history, no resource, no faults and no checks. What a cell
// reaches beside it is what lockcheck costs the lock. It returns the
// acquisitions a second over the window a run's are measured over
// (report.Window), from its clients' start.
func bareLoop(ctx context.Context, cfg BenchConfig, cl *cluster.Cluster, lock string, w workload.Config) (float64, error) {
	entry, err := cfg.Registry.Lookup(lock)
	if err != nil {
		return 0, err
	}
	clock := history.NewClock()
	env := agent.AccessOf(cl).Env(w, clock.Now, nil)
	env.TLS, env.DialAddr = cl.TLS, cl.DialAddr
	locker, err := entry.Factory(env)
	if err != nil {
		return 0, err
	}
	defer lockimpl.Close(locker)
	if err := workload.StartProcesses(locker, w.Clients); err != nil {
		return 0, err
	}
	keys := make([]string, w.Keys)
	for i := range keys {
		keys[i] = workload.KeyName(w.KeyPrefix, i)
	}
	ctx, cancel := context.WithTimeout(ctx, w.Duration)
	defer cancel()
	start := time.Now()
	wins := make([]report.Window, w.Clients)
	var wg sync.WaitGroup
	for c := range w.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The lock is called as a run's clients call it (workload's
			// opCtx): with no deadline, its process if it has one. A
			// deadline changes what some locks do (redislock makes a timer
			// of its own when it finds none): ctx is for the waits only.
			op := lockimpl.WithClient(context.Background(), c)
			r := rand.New(rand.NewPCG(uint64(w.Seed), uint64(c)))
			win := report.Window{From: cfg.Warmup}
			for ctx.Err() == nil {
				call := time.Since(start)
				l, err := locker.Acquire(op, keys[r.IntN(len(keys))], w.TTL)
				win.Op(call, time.Since(start), err == nil)
				if err == nil {
					ctxwait.Sleep(ctx, w.Hold)
					call = time.Since(start)
					_ = locker.Release(op, l)
					win.Op(call, time.Since(start), false)
				} else if !errors.Is(err, lockimpl.ErrNotAcquired) && ctx.Err() == nil {
					ctxwait.Sleep(ctx, time.Millisecond) // an error, not a refusal: do not spin on it
				}
				ctxwait.Sleep(ctx, w.Think)
			}
			wins[c] = win
		}()
	}
	wg.Wait()
	total := report.Window{From: cfg.Warmup}
	for _, win := range wins {
		total.Merge(win)
	}
	return total.Rate(), nil
}
