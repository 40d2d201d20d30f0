package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
)

// The pool fault (nemesis.ClientPool): each client has a lock of its
// own (PoolPerClient), as each instance of an application has its own
// Redis client, with a pool of that many connections. When a targeted
// client enters its critical section, the application's own traffic
// takes every connection of that pool: one blocking XREAD a
// connection, of a stream of its own, for the fault's hold. The holder's renewals, sent while it
// works, then wait in go-redis's pool for a connection (PoolTimeout, the
// op timeout), Redis and the network healthy; a holder that trusts its
// renewal works on past its lease's end.

func init() {
	RegisterClientFault(nemesis.ClientPool, func(r *Runner, rng *rand.Rand, f nemesis.ClientFault) []int {
		return r.poolClients(rng, f.N, f.D)
	})
}

// poolState is the clients' side of the pool fault.
type poolState struct {
	targets              // targeted slots, and the heal that ends the traffic
	hold    atomic.Int64 // ns the traffic holds a pool
	ttl     atomic.Int64 // the run's TTL, ns: a renewal sent this long before the pool frees outlasted its lease
	size    int          // connections a client's pool has (PoolPerClient)
	// clients are each slot's lock's clients (under cmu, as sent is).
	cmu     sync.Mutex
	clients [][]redis.UniversalClient
	// busy is set while the traffic holds the slot's pool; sent are the
	// instants the slot's holder sent commands meanwhile;
	// waited is the figure since the last Tally.
	busy   []atomic.Bool
	sent   [][]time.Time
	waited atomic.Int64
	wg     sync.WaitGroup
}

func newPoolState(clients, size int) *poolState {
	return &poolState{targets: newTargets(clients), busy: make([]atomic.Bool, clients),
		clients: make([][]redis.UniversalClient, clients), sent: make([][]time.Time, clients), size: size}
}

// poolClients targets n clients chosen by rng until HealClients: each
// time one of them is in its critical section, its pool is taken for
// hold.
func (r *Runner) poolClients(rng *rand.Rand, n int, hold time.Duration) []int {
	f, p := r.faults, r.faults.pools
	if p.size == 0 {
		return nil // the run's clients share one lock: nothing to exhaust
	}
	p.hold.Store(int64(max(hold, r.cfg.TTL*3/2)))
	p.ttl.Store(int64(r.cfg.TTL))
	healed := p.healing()
	var ids []int
	for _, s := range rng.Perm(f.slots)[:min(n, f.slots)] {
		p.on[s].Store(true)
		ids = append(ids, int(f.ids[s].Load()))
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			r.takePools(s, healed)
		}()
	}
	return ids
}

// takePools takes slot s's pool each time its client enters a critical
// section, until healed.
func (r *Runner) takePools(s int, healed <-chan struct{}) {
	f, p := r.faults, r.faults.pools
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	wasHolding := false
	for {
		select {
		case <-healed:
			return
		case <-tick.C:
		}
		holding := f.holding[s].Load()
		if holding && !wasHolding {
			p.take(s, healed)
		}
		wasHolding = holding
	}
}

// take holds every connection of slot s's clients with a blocking read each
// of a stream no one writes, for the hold or until healed.
func (p *poolState) take(s int, healed <-chan struct{}) {
	p.cmu.Lock()
	clients := p.clients[s]
	p.cmu.Unlock()
	hold := time.Duration(p.hold.Load())
	ctx, cancel := context.WithTimeout(context.Background(), hold+time.Second)
	defer cancel()
	go func() {
		select {
		case <-healed:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.busy[s].Store(true)
	defer p.free(s)
	var wg sync.WaitGroup
	for _, c := range clients {
		for i := range p.size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A consumer blocked on a stream of its own (XREAD BLOCK
				// takes milliseconds, and go-redis waits that long past
				// its read timeout; BLPOP's timeout it rounds to seconds).
				// The stream is never written: the read ends at its block.
				c.XRead(ctx, &redis.XReadArgs{Streams: []string{fmt.Sprintf("lockcheck:pool-traffic:%d:%d", s, i), "$"}, Count: 1, Block: hold})
			}()
		}
	}
	wg.Wait()
}

// free ends slot s's busy spell and counts what was sent in it: each
// command sent a TTL or more before the pool came free waited past the
// end of the lease it was to renew (a lease has at most a TTL left when
// a renewal goes out), whether it waited for the connection or gave up
// on it first; what the holder then did is the lock's.
func (p *poolState) free(s int) {
	p.busy[s].Store(false)
	now := time.Now()
	p.cmu.Lock()
	sent := p.sent[s]
	p.sent[s] = nil
	p.cmu.Unlock()
	for _, t := range sent {
		if now.Sub(t) >= time.Duration(p.ttl.Load()) {
			p.waited.Add(1)
		}
	}
}

// heal stops targeting clients and ends the traffic.
func (p *poolState) heal() {
	p.untarget()
	p.wg.Wait()
}

// poolHook is the go-redis hook of the pool fault: it notes the
// commands a holder sends from its section while the traffic holds its
// pool (free counts them).
type poolHook struct{ f *faults }

// note notes the command of ctx's client if it is sent from its section
// while its pool is held.
func (h poolHook) note(ctx context.Context) {
	id := lockimpl.ClientFrom(ctx)
	if id < 0 {
		return
	}
	s, p := h.f.slot(id), h.f.pools
	if !p.busy[s].Load() || !h.f.holding[s].Load() {
		return
	}
	p.cmu.Lock()
	p.sent[s] = append(p.sent[s], time.Now())
	p.cmu.Unlock()
}

func (h poolHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h poolHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmd)
	}
}

func (h poolHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmds)
	}
}

// poolTally is the pool fault's figure since the last call.
func (r *Runner) poolTally() map[string]int64 {
	return map[string]int64{history.RenewalPoolWait: r.faults.pools.waited.Swap(0)}
}

// perClient is the lock of a run whose clients each have a lock of
// their own (PoolPerClient): made by the lock's factory once a client
// slot, each with a pool of PoolPerClient connections, and each call
// sent to the lock of its client's slot.
type perClient struct {
	locks []lockimpl.Locker
	f     *faults
}

// pooledFactory makes factory's lock once for each of clients slots.
func (r *Runner) pooledFactory(factory lockimpl.Factory, clients int) lockimpl.Factory {
	return func(env lockimpl.Env) (lockimpl.Locker, error) {
		p := &perClient{f: r.faults}
		for s := range clients {
			e := env
			e.Pool, e.PoolSize = r.faults.pools.size, r.faults.pools.size
			e.OnClient = func(c redis.UniversalClient) {
				r.faults.pools.cmu.Lock()
				r.faults.pools.clients[s] = append(r.faults.pools.clients[s], c)
				r.faults.pools.cmu.Unlock()
			}
			l, err := factory(e)
			if err != nil {
				_ = p.Close()
				return nil, err
			}
			if _, ok := l.(lockimpl.ClientProcesses); ok {
				lockimpl.Close(l)
				_ = p.Close()
				return nil, errors.New("a lock a client (--pool-per-client) runs processes of its own, whose pools lockcheck does not size")
			}
			p.locks = append(p.locks, l)
		}
		return p, nil
	}
}

func (p *perClient) of(ctx context.Context) lockimpl.Locker {
	return p.locks[p.f.slot(max(lockimpl.ClientFrom(ctx), 0))]
}

func (p *perClient) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	return p.of(ctx).Acquire(ctx, key, ttl)
}

func (p *perClient) Release(ctx context.Context, l lockimpl.Lease) error {
	return p.of(ctx).Release(ctx, l)
}

func (p *perClient) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	return p.of(ctx).Extend(ctx, l, ttl)
}

// Close closes every client's lock.
func (p *perClient) Close() error {
	for _, l := range p.locks {
		lockimpl.Close(l)
	}
	return nil
}
