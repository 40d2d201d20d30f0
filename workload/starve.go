package workload

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// The starve fault (nemesis.ClientStarve): a targeted client's commands
// sent while it is in its critical section, which are its lock's
// renewals (the holder itself sends nothing there), are held back in
// the go-redis hook of the lock's client for the hold, then go on. The
// holder works on meanwhile, Redis and the network healthy: a renewal
// thread that gets no time, where a pause (SIGSTOP, pause-holder) stops
// renewals and holder together.

// starveState is the clients' side of the starve fault.
type starveState struct {
	targets              // targeted slots, and the heal that ends every hold
	hold    atomic.Int64 // ns a renewal is held back
	ttl     atomic.Int64 // the run's TTL, ns: a hold this long outlasts the lease
	// starved is the figure since the last Tally.
	starved atomic.Int64
}

func newStarveState(clients int) *starveState {
	return &starveState{targets: newTargets(clients)}
}

// targets are the client slots a fault of the window targets (on), and
// its heal: healed is closed then, which ends whatever the fault holds.
type targets struct {
	on     []atomic.Bool
	mu     sync.Mutex
	healed chan struct{}
}

func newTargets(clients int) targets {
	return targets{on: make([]atomic.Bool, clients), healed: make(chan struct{})}
}

// healing returns what the next heal closes.
func (t *targets) healing() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.healed
}

// untarget stops targeting every slot and ends what the fault holds.
func (t *targets) untarget() {
	for i := range t.on {
		t.on[i].Store(false)
	}
	t.mu.Lock()
	close(t.healed)
	t.healed = make(chan struct{})
	t.mu.Unlock()
}

// starveClients targets n clients chosen by rng until HealClients: their
// renewals are held back for hold each.
func (r *Runner) starveClients(rng *rand.Rand, n int, hold time.Duration) []int {
	f := r.faults
	f.starves.hold.Store(int64(cmp.Or(hold, r.cfg.TTL*3/2)))
	f.starves.ttl.Store(int64(r.cfg.TTL))
	var ids []int
	for _, s := range rng.Perm(f.slots)[:min(n, f.slots)] {
		f.starves.on[s].Store(true)
		ids = append(ids, int(f.ids[s].Load()))
	}
	return ids
}

// heal stops targeting clients and ends every hold.
func (s *starveState) heal() { s.untarget() }

// starveHook is the go-redis hook of the starve fault.
type starveHook struct{ f *faults }

// starving says whether the command of ctx's client is a renewal the
// fault holds back: the client is targeted and in its section.
func (h starveHook) starving(ctx context.Context) bool {
	id := lockimpl.ClientFrom(ctx)
	if id < 0 {
		return false
	}
	s := h.f.slot(id)
	return h.f.starves.on[s].Load() && h.f.holding[s].Load()
}

func (h starveHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h starveHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.starving(ctx) {
			if err := h.f.starves.wait(ctx); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (h starveHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.starving(ctx) {
			if err := h.f.starves.wait(ctx); err != nil {
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// wait holds a renewal back for the hold, or until the heal. The
// renewal's own deadline passing does not end it (a starved renewal
// does not run its timer either: it goes on late, and go-redis fails a
// command whose context is done); its cancel does (the lock stopping
// it, at a release), so that a release does not wait out the hold. A
// hold that lasted the TTL is counted: it outlasted the lease the
// renewal was to renew, which had at most a TTL left when it was sent.
func (s *starveState) wait(ctx context.Context) error {
	healed := s.healing()
	start := time.Now()
	t := time.NewTimer(time.Duration(s.hold.Load()))
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case <-t.C:
		case <-healed:
		case <-done:
			if !errors.Is(ctx.Err(), context.Canceled) {
				done = nil
				continue
			}
			return ctx.Err()
		}
		if time.Since(start) >= time.Duration(s.ttl.Load()) {
			s.starved.Add(1)
		}
		return nil
	}
}
