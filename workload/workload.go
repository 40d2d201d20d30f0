package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ctxwait"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// Runner runs one workload. Build it with New, then call Run once.
type Runner struct {
	cfg    Config
	locker lockimpl.Locker
	// waiter is locker as a blocking lock, under --wait (waitIn); nil
	// otherwise.
	waiter lockimpl.Waiter
	// keyTTLms is the TTL the lock sets in Redis for cfg.TTL
	// (lockimpl.KeyTTL), what each acquire records: the same for the
	// whole run, read once.
	keyTTLms int64
	// procs is locker's process per client, if it runs one: pauses stop
	// it and crashes kill it.
	procs    lockimpl.ClientProcesses
	now      func() int64
	record   func(history.Op)
	counters *Counters
	resource Resource
	faults   *faults
	attempts atomic.Int64
	// stop ends the run with a cause (a client panic, a lock that
	// misbehaved as a program).
	stop context.CancelCauseFunc

	// reenterer is locker as a reentrant lock, under --reenter
	// (reenterIn); nil otherwise.
	reenterer lockimpl.Reenterer
}

// New returns a Runner. cfg must have been through WithDefaults. record
// receives every op; it must be safe for concurrent use.
func New(cfg Config, now func() int64, record func(history.Op)) *Runner {
	r := &Runner{cfg: cfg, now: now, record: record, counters: &Counters{}}
	r.resource = newResource(r.record, now)
	r.faults = newFaultsPooled(cfg.Clients, cfg.PoolPerClient)
	r.faults.cutOps = &r.counters.cutOff
	return r
}

// Counters returns the live totals.
func (r *Runner) Counters() *Counters { return r.counters }

// KeyName returns the lock key of key number i: "lock:i", or under a
// prefix prefix{lock:i}, whose hash tag keeps a lock's own keys
// ("{key}:fence") in its cluster slot and under the prefix too.
func KeyName(prefix string, i int) string {
	if prefix == "" {
		return "lock:" + strconv.Itoa(i)
	}
	return prefix + "{lock:" + strconv.Itoa(i) + "}"
}

// Run starts the clients and returns when all of them have stopped: when
// ctx is cancelled, the duration has passed or the op budget is spent. A
// client stopping mid-hold leaves its critical section and releases. A
// panic in a client (a Locker bug) stops the run and is returned as an
// error; nothing recorded is lost.
func (r *Runner) Run(ctx context.Context, locker lockimpl.Locker) error {
	r.locker = locker
	r.keyTTLms = lockimpl.KeyTTL(locker, r.cfg.TTL).Milliseconds()
	r.procs, _ = locker.(lockimpl.ClientProcesses)
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Duration)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stop = cancel
	if r.cfg.Rate > 0 {
		r.runOpen(ctx)
	} else {
		r.eachClient(func(id int) { r.client(ctx, id) }).Wait()
	}
	if err := context.Cause(ctx); err != nil && err != context.Canceled && err != context.DeadlineExceeded {
		return err
	}
	return nil
}

// eachClient runs fn for every client id, each in a goroutine of its
// own whose panic stops the run; Wait on the group waits for them all.
func (r *Runner) eachClient(fn func(id int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for id := 0; id < r.cfg.Clients; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.recoverClient(id)
			fn(id)
		}()
	}
	return &wg
}

// recoverClient stops the run with a client's panic (a Locker bug) as
// its cause; deferred by every client goroutine.
func (r *Runner) recoverClient(id int) {
	if p := recover(); p != nil {
		r.stop(fmt.Errorf("client %d panicked: %v\n%s", id, p, debug.Stack()))
	}
}

type client struct {
	id   int
	rng  *rand.Rand
	zipf *rand.Zipf
	// sections counts its critical sections (a solo client pauses in
	// every other one).
	sections int
	// ctx carries the client's id and gate to every call; ctxID is the id
	// it was made for (a crashed client comes back under a new one).
	ctx   context.Context
	ctxID int
}

// newClient is client id's state: its random source, seeded from the run's
// seed and its stream (its id, unless Config.Streams names another), and
// its key distribution.
func newClient(cfg Config, id int) *client {
	stream := id
	if id < len(cfg.Streams) {
		stream = cfg.Streams[id]
	}
	c := &client{id: id, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(stream)))}
	if cfg.KeyDist == KeyZipf && cfg.Keys > 1 {
		c.zipf = rand.NewZipf(c.rng, 1.1, 1, uint64(cfg.Keys-1))
	}
	return c
}

func (r *Runner) client(ctx context.Context, id int) {
	c := newClient(r.cfg, id)
	slot := r.faults.slot(id)
	if !ctxwait.Sleep(ctx, r.startAfter(id)) {
		return
	}
	for ctx.Err() == nil {
		k := c.pickKey(r.cfg.Keys)
		if slot < r.cfg.solo() {
			k = r.cfg.Keys + slot // its own key (Config.SoloKeys)
		}
		key := KeyName(r.cfg.KeyPrefix, k)
		if lease, ok := r.acquire(ctx, c, key); ok {
			r.holdAndRelease(ctx, c, lease)
		}
		if r.cfg.Think > 0 && !ctxwait.Sleep(ctx, r.cfg.Think) {
			return
		}
	}
}

// startAfter is how long client id waits before its first op. A
// read-write lock's clients start a mean hold apart on each key (id x
// hold / keys): readers granted at once, around a write op, are the one
// pattern its model must order every way, and a start-up burst of them
// (9 read grants and a write refusal on one key, 17 ops, at 40 clients a
// key) outran two minutes of check where the rest of the run, its
// readers judged apart, took 100 ms a key. Other shapes start at once.
// The spread is at most a quarter of the run.
func (r *Runner) startAfter(id int) time.Duration {
	if r.cfg.Readers == 0 {
		return 0
	}
	step := max(r.cfg.Hold, time.Millisecond) / time.Duration(max(r.cfg.Keys, 1))
	if r.cfg.Duration > 0 {
		// The last client starts within the run's first quarter, where
		// holds are long (3 s holds of 20 clients on 5 keys: 11.4 s).
		step = min(step, r.cfg.Duration/time.Duration(4*max(r.cfg.Clients, 1)))
	}
	return time.Duration(id) * step
}

// holdAndRelease holds a lease, then releases it, unless --skip-release
// has the client forget to.
func (r *Runner) holdAndRelease(ctx context.Context, c *client, lease lockimpl.Lease) {
	if r.reenterer != nil {
		lease = r.holdNested(ctx, c, lease)
	} else {
		r.hold(ctx, c, lease)
	}
	if r.cfg.SkipRelease > 0 && c.rng.Float64() < r.cfg.SkipRelease && ctx.Err() == nil {
		// Code that returned early and never reached its unlock: the
		// lease runs out its TTL.
		r.counters.skipped.Add(1)
		return
	}
	r.release(ctx, c, lease)
}

func (c *client) pickKey(keys int) int {
	if c.zipf != nil {
		return int(c.zipf.Uint64())
	}
	return c.rng.IntN(keys)
}

// opCtx is the context of a client's Redis operations. It does not derive
// from the run's ctx: a run that is stopping lets in-flight operations
// finish (or time out) so that their outcome is known, rather than
// cancelling them into "info". It has no deadline either: the op timeout
// is enforced by the Locker's socket deadlines (lockimpl.Env.OpTimeout),
// which spares every operation a context and a timer, the largest cost
// the harness added per op. (The cancel fault gives a client it targets
// a cancellable context per op: cancellable.)
func (r *Runner) opCtx(c *client) context.Context {
	if c.ctx == nil || c.ctxID != c.id {
		c.ctx = context.WithValue(lockimpl.WithClient(context.Background(), c.id), gateKey{}, &r.faults.gates[r.faults.slot(c.id)])
		c.ctxID = c.id
	}
	return c.ctx
}

// notSent handles an op that never reached Redis, or was undone before it
// returned (lockimpl.ErrUndone): it did not happen and says nothing about
// the lock, so it is counted but not recorded, and the
// client waits a little so as not to spin on a node that is down. (A
// crashed client's last op, by contrast, is recorded as indeterminate: it
// may have been half done.)
func (r *Runner) notSent(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, lockimpl.ErrNotSent):
		r.counters.notSent.Add(1)
	case errors.Is(err, lockimpl.ErrUndone):
		r.counters.undone.Add(1)
	default:
		return false
	}
	ctxwait.Sleep(ctx, notSentPause)
	return true
}

// notSentPause is how long a client waits after a command that could not
// be sent.
const notSentPause = 10 * time.Millisecond

// acquire tries until it holds the lock, the retry policy gives up, or the
// run stops. Every attempt is one op.
func (r *Runner) acquire(ctx context.Context, c *client, key string) (lockimpl.Lease, bool) {
	for a := 0; r.cfg.Policy.more(a); a++ {
		lease, res := r.attempt(ctx, c, key, 0)
		switch res {
		case held:
			return lease, true
		case stopped:
			return lockimpl.Lease{}, false
		case notSent:
			continue // it paused already, and did not happen
		}
		if r.cfg.Policy.more(a+1) && !ctxwait.Sleep(ctx, r.cfg.Policy.Delay(a, c.rng)) {
			return lockimpl.Lease{}, false
		}
	}
	r.counters.giveUps.Add(1)
	return lockimpl.Lease{}, false
}

// attemptResult is how an acquire attempt ended.
type attemptResult int

const (
	held    attemptResult = iota // the client holds the lease
	refused                      // taken, or indeterminate: it may try again
	notSent                      // it never reached Redis
	stopped                      // the run is over, the op budget spent, or the client crashed
)

// attempt makes one acquire attempt, recorded as one op; due is when an
// open-model attempt was scheduled (0: a closed-model client, which
// counts its attempts against the op budget here).
func (r *Runner) attempt(ctx context.Context, c *client, key string, due int64) (lockimpl.Lease, attemptResult) {
	if ctx.Err() != nil {
		return lockimpl.Lease{}, stopped
	}
	if due == 0 && r.cfg.Ops > 0 && r.attempts.Add(1) > r.cfg.Ops {
		return lockimpl.Lease{}, stopped
	}
	octx, end := r.cancellable(r.opCtx(c), c)
	defer end()
	octx, access := r.drawAccess(octx, c)
	// call is read before the request is sent and ret after its reply
	// is read, so [call, ret] contains the moment Redis applied it.
	call := r.now()
	waited := r.waitingIn(c)
	lease, err := r.tryAcquire(octx, key)
	waited()
	ret := r.now()
	if r.notSent(ctx, err) {
		return lockimpl.Lease{}, notSent
	}
	op := history.Op{Process: c.id, F: history.Acquire, Key: key, Token: lease.Token, Fence: lease.Fence,
		TTLms: r.keyTTLms, Call: call, Return: ret, Scheduled: min(due, call)}
	if r.cfg.Permits > 1 {
		op.Permits = r.cfg.Permits
	}
	op.Access = access
	r.markWait(&op, lease, err)
	if r.cfg.Reenter > 0 {
		op.Depth = 1 // a reentrant owner's outer acquire
	}
	if lockimpl.Outcome(err) == history.Info && op.Token == "" {
		// It may have taken effect under a token the lock did not
		// return: a lease of its own that no one releases.
		op.Token = "unknown-" + lockimpl.NewToken()
	}
	lockimpl.Record(r.record, op, err)
	r.badLock(err)
	if errors.Is(err, ErrCrashed) {
		r.die(c)
		return lockimpl.Lease{}, stopped
	}
	if err != nil {
		return lockimpl.Lease{}, refused
	}
	// The lease runs from our call, which is no later than the one the
	// lock took: the deadline we honour is never too late.
	// A blocking acquire's runs from the try that took it (op.Tried).
	if op.Tried == 0 && (lease.Acquired == 0 || time.Duration(call) < lease.Acquired) {
		lease.Acquired = time.Duration(call)
	}
	return lease, held
}

// hold is the time between acquire and release. The client wants the lock
// for a drawn hold time; it writes to the protected resource only until its
// lease's deadline minus the margin (cutting the write short if it has to),
// and then, like a job that overran its TTL, still releases only when the
// hold time is over. That late release is what exposes locks whose release
// does not check ownership.
//
// A client armed by pause-client stops right after it checked its deadline
// and before it writes, longer than the TTL (a stop-the-world pause), and
// then writes anyway: the stale holder.
func (r *Runner) hold(ctx context.Context, c *client, l lockimpl.Lease) {
	start := r.now()
	end := start + int64(r.holdTime(c))
	if slot := r.faults.slot(c.id); slot < r.cfg.solo() {
		if c.sections++; c.sections%2 == 0 {
			r.faults.holdPause[slot].Store(int64(r.cfg.TTL * 3 / 2)) // taken in the section
		}
	}
	if r.clientNow(c, l) < int64(l.Deadline())-int64(r.cfg.Margin) {
		if d := r.takePause(c, false); d > 0 {
			r.pauseClient(ctx, c, d)
			r.section(ctx, c, l, r.now()+int64(staleWrite(r.cfg.TTL)), false)
		} else {
			r.section(ctx, c, l, end, true)
		}
	}
	if now := r.now(); end > now {
		ctxwait.Sleep(ctx, time.Duration(end-now))
	}
}

// staleWrite is how long a client that resumes from a pause writes.
func staleWrite(ttl time.Duration) time.Duration { return max(5*time.Millisecond, ttl/4) }

// section is one critical section: enter the resource, work until end (and,
// if bounded, no later than the lease's deadline minus the margin), exit.
// Its write op says whether it was cut short (it did not reach end, or,
// unbounded, it is a paused client's stale write) and whether the client
// left after its lease's deadline.
func (r *Runner) section(ctx context.Context, c *client, l lockimpl.Lease, end int64, bounded bool) {
	wcall, sec, accepted := r.resource.Enter(l)
	if !accepted {
		r.resource.Exit(history.Op{Process: c.id, Call: wcall, Return: wcall, CutShort: true}, l, sec, false)
		return
	}
	var reached bool
	var wret int64
	if bounded {
		reached, wret = r.waitInSection(ctx, c, l, end)
	} else {
		reached = ctxwait.Sleep(ctx, time.Duration(end-r.now()))
		wret = r.now()
	}
	r.resource.Exit(history.Op{Process: c.id, Call: wcall, Return: wret, CutShort: !bounded || !reached,
		Late: r.now() > int64(l.Deadline())}, l, sec, true)
}

// waitInSection waits until end, or until the lease's deadline minus the
// margin, the lease is lost, or the run stops. It reports whether it
// reached end, and when the client left the critical section.
//
// The work in the section is simulated by waiting on a timer, so when the
// timer ends the section, the work ended when the timer was due: a
// goroutine that the scheduler wakes late (seen: 40ms on two busy cores
// under -race) did nothing with the resource in between, and recording its
// wake-up would charge a correct lock with the harness's own stall. Late
// wake-ups are still counted (LateExits). A section ended by an event
// (lease lost, run stopped) exits when the event is seen.
//
// A client armed by pause-holder freezes here, watchdog included, and on
// waking checks its lease before it touches the resource again: like a
// timer woken late, it did nothing while frozen, so if its deadline passed
// meanwhile it left when the deadline was due. Its watchdog's overdue
// extend goes out as it wakes; a lock whose extend does not check
// ownership extends the next holder's lease, and may keep this client in.
func (r *Runner) waitInSection(ctx context.Context, c *client, l lockimpl.Lease, end int64) (bool, int64) {
	var lost <-chan struct{}
	if l.Watch != nil {
		lost = l.Watch.Lost()
	}
	slot := r.faults.slot(c.id)
	r.faults.holding[slot].Store(true)
	defer r.faults.holding[slot].Store(false)
	// idle is since when the client has done nothing with the resource
	// (asleep on its timer or frozen by a pause); -1: not yet.
	idle := int64(-1)
	for {
		// The deadline moves when a watchdog extends the lease.
		// A client whose own clock fell behind (client-clock) sees its
		// deadline that much later.
		now := r.now()
		deadline := int64(l.Deadline()) - int64(r.cfg.Margin) + r.faults.drift(c.id, int64(l.Acquired), now)
		until := min(end, deadline)
		if now >= until {
			exit := now
			if idle >= 0 {
				// Idle since then, it left when until was due.
				exit = min(now, max(idle, until))
			}
			return until == end, exit
		}
		if idle < 0 {
			idle = now
		}
		if d := r.takePause(c, true); d > 0 {
			r.pauseClient(ctx, c, d)
			continue
		}
		t := time.NewTimer(time.Duration(until - now))
		select {
		case <-t.C:
		case <-r.faults.poke[slot]:
			t.Stop() // a pause-holder armed: take it at the top
		case <-lost:
			t.Stop()
			r.counters.lost.Add(1)
			r.badLock(l.Watch.Err())
			return false, r.now()
		case <-ctx.Done():
			t.Stop()
			return false, r.now()
		}
	}
}

// clientNow is the time by the client's own clock, measured from the
// lease's start (client-clock makes it run slow or jump back).
func (r *Runner) clientNow(c *client, l lockimpl.Lease) int64 {
	now := r.now()
	return now - r.faults.drift(c.id, int64(l.Acquired), now)
}

func (r *Runner) holdTime(c *client) time.Duration { return holdTime(r.cfg, c) }

// holdTime is a hold drawn from c's source by cfg's distribution.
func holdTime(cfg Config, c *client) time.Duration {
	h := cfg.Hold
	switch cfg.HoldDist {
	case HoldExp:
		return time.Duration(c.rng.ExpFloat64() * float64(h))
	case HoldUniform:
		return time.Duration(c.rng.Float64() * 2 * float64(h))
	}
	return h
}

func (r *Runner) release(ctx context.Context, c *client, l lockimpl.Lease) error {
	if r.crashProcess(c) {
		return ErrCrashed
	}
	octx, end := r.cancellable(r.opCtx(c), c)
	defer end()
	call := r.now()
	err := r.locker.Release(octx, l)
	ret := r.now()
	if r.notSent(ctx, err) {
		return err
	}
	lockimpl.Record(r.record, history.Op{Process: c.id, F: history.Release, Key: l.Key,
		Token: l.Token, Fence: l.Fence, Call: call, Return: ret}, err)
	r.badLock(err)
	if errors.Is(err, ErrCrashed) {
		r.die(c)
	}
	return err
}

// badLock stops the run if err says the lock under test misbehaved as a
// program (lockimpl.ErrBadLock): every later op would be noise.
func (r *Runner) badLock(err error) {
	if errors.Is(err, lockimpl.ErrBadLock) {
		r.stop(err)
	}
}

// UseResource makes res the protected resource of the run (before Run):
// one that many machines' clients share.
func (r *Runner) UseResource(res Resource) { r.resource = res }
