package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/internal/ctxwait"
	"github.com/lockcheck/lockcheck/internal/ext"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
)

// Play arms the client fault f on f.N clients chosen by rng
// (nemesis.Clients): the one place a client fault's kind is read. A kind
// neither built in nor registered is refused.
func (r *Runner) Play(rng *rand.Rand, f nemesis.ClientFault) ([]int, error) {
	switch f.Kind {
	case nemesis.ClientPause:
		return r.pauseClients(rng, f.N, f.D, f.InSection), nil
	case nemesis.ClientCrash:
		return r.crashClients(rng, f.N), nil
	case nemesis.ClientCut:
		return r.cutClients(rng, f.N), nil
	case nemesis.ClientSkew:
		return r.skewClients(rng, f.N, f.Rate, f.Jump), nil
	case nemesis.ClientCancel:
		return r.cancelClients(rng, f.N, f.D), nil
	case nemesis.ClientStarve:
		return r.starveClients(rng, f.N, f.D), nil
	case nemesis.ClientDropUnlock:
		return r.dropUnlocks(), nil
	}
	for _, c := range clientFaults.With(nil) {
		if c.kind == f.Kind {
			return c.play(r, rng, f), nil
		}
	}
	return nil, fmt.Errorf("client fault %q: not one these clients play (%s, %s, %s, %s, %s, %s, %s, or one registered)", f.Kind,
		nemesis.ClientPause, nemesis.ClientCrash, nemesis.ClientCut, nemesis.ClientSkew, nemesis.ClientCancel, nemesis.ClientStarve, nemesis.ClientDropUnlock)
}

// ClientFaultPlayer plays a registered client fault on a run's clients
// and returns the process ids it acted on.
type ClientFaultPlayer func(r *Runner, rng *rand.Rand, f nemesis.ClientFault) []int

type clientFaultEntry struct {
	kind string
	play ClientFaultPlayer
}

var clientFaults ext.Added[clientFaultEntry]

// RegisterClientFault adds a client fault kind the workload plays (a
// nemesis.ClientKind's start names it), and returns a function that
// removes it.
func RegisterClientFault(kind string, play ClientFaultPlayer) (unregister func()) {
	return clientFaults.Add(clientFaultEntry{kind, play})
}

// faults is the client side of the nemesis: pauses and crashes armed for
// chosen clients, taken when the client reaches the point they act at.
type faults struct {
	slots int
	ids   []atomic.Int64 // current process id of each client slot
	pause []atomic.Int64 // armed pause, ns; 0: none
	// holdPause is an armed pause inside the critical section, ns;
	// holding tells which slots are in one now, and poke wakes such a
	// slot so that it takes its pause at once.
	holdPause []atomic.Int64
	holding   []atomic.Bool
	poke      []chan struct{}
	crash     []atomic.Int32 // crash state of the slot's current client
	gates     []gate
	// cut are the slots cut off from Redis (client-partition), each
	// closed when healed; opTimeout is how long a cut-off command waits
	// before it times out.
	cutMu  sync.Mutex
	cut    map[int]chan struct{}
	clocks map[int]clientClock // skewed client clocks (client-clock), by slot
	// faulty is set while cut or clocks has an entry: the clients' hot
	// path reads it, and takes cutMu only then.
	faulty    atomic.Bool
	opTimeout time.Duration
	cutOps    *atomic.Int64 // commands that timed out cut off (Counters)
	cancels   *cancelState  // the cancel fault (cancel.go)
	starves   *starveState  // the starve fault (starve.go)
	drops     *dropState    // the drop-unlock fault (drop_unlock.go)
	pools     *poolState    // the pool fault (pool.go)
}

func newFaults(clients int) *faults {
	return newFaultsPooled(clients, 0)
}

// newFaultsPooled is newFaults for a run whose clients each have a lock
// with a pool of size connections (0: one lock for all).
func newFaultsPooled(clients, size int) *faults {
	f := &faults{slots: clients, ids: make([]atomic.Int64, clients), pause: make([]atomic.Int64, clients), holdPause: make([]atomic.Int64, clients),
		crash: make([]atomic.Int32, clients), gates: make([]gate, clients),
		holding: make([]atomic.Bool, clients), poke: make([]chan struct{}, clients), cut: map[int]chan struct{}{},
		clocks: map[int]clientClock{}, cancels: newCancelState(clients), starves: newStarveState(clients), drops: newDropState(clients),
		pools: newPoolState(clients, size)}
	for i := range f.poke {
		f.poke[i] = make(chan struct{}, 1)
	}
	for i := range f.ids {
		f.ids[i].Store(int64(i))
	}
	return f
}

func (f *faults) slot(id int) int { return id % f.slots }

// Crash states of a client slot.
const (
	crashNone  = 0
	crashArmed = 1 // dies after its next successful command
	crashDue   = 2 // dies at its next command
	crashDead  = 3 // died; die() has not yet given the slot a new id
)

// crashed is the go-redis hook's question: must this command fail as if
// its client had died? A dead client's commands always do (its watchdog
// dies with it); a client whose crash is due dies now. A slot's ids only
// grow, one step per death, so an id below its slot's current id is dead.
func (f *faults) crashed(id int) bool {
	if id < 0 {
		return false
	}
	s := f.slot(id)
	if cur := f.ids[s].Load(); int64(id) != cur {
		return int64(id) < cur
	}
	return f.crash[s].CompareAndSwap(crashDue, crashDead) || f.crash[s].Load() == crashDead
}

// succeeded hears of each command that succeeded: an armed client may now
// hold a lock, so its crash falls due (right before its next command:
// the PEXPIRE after a SETNX, the release after a SET NX PX).
func (f *faults) succeeded(id int) {
	if id < 0 {
		return
	}
	s := f.slot(id)
	if f.ids[s].Load() == int64(id) {
		f.crash[s].CompareAndSwap(crashArmed, crashDue)
	}
}

// pauseClients arms a pause of d for n clients chosen by rng: each stops
// between its next acquire and its write, or, inSection, in the middle of
// a critical section: clients in one now are chosen first, and stop at
// once. It returns the process ids.
func (r *Runner) pauseClients(rng *rand.Rand, n int, d time.Duration, inSection bool) []int {
	f := r.faults
	perm := rng.Perm(f.slots)
	armed := f.pause
	if inSection {
		// Current holders first, each slot read once (a comparator
		// reading live flags could see them change mid-sort).
		armed = f.holdPause
		var holders, rest []int
		for _, s := range perm {
			if f.holding[s].Load() {
				holders = append(holders, s)
			} else {
				rest = append(rest, s)
			}
		}
		perm = append(holders, rest...)
	}
	var ids []int
	for _, s := range perm[:min(n, f.slots)] {
		armed[s].Store(int64(d))
		if inSection {
			select {
			case f.poke[s] <- struct{}{}:
			default:
			}
		}
		ids = append(ids, int(f.ids[s].Load()))
	}
	return ids
}

// crashClients arms a crash for n clients chosen by rng: each dies right
// before its first Redis command after one that succeeded, that is while it
// may hold a lock, and never releases it.
func (r *Runner) crashClients(rng *rand.Rand, n int) []int {
	var ids []int
	for _, s := range rng.Perm(r.faults.slots)[:min(n, r.faults.slots)] {
		r.faults.crash[s].Store(crashArmed)
		ids = append(ids, int(r.faults.ids[s].Load()))
	}
	return ids
}

// holdersFirst returns n slots chosen by rng, those in a critical
// section now first.
func (f *faults) holdersFirst(rng *rand.Rand, n int) []int {
	var holders, rest []int
	for _, s := range rng.Perm(f.slots) {
		if f.holding[s].Load() {
			holders = append(holders, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(holders, rest...)[:min(n, f.slots)]
}

// cutClients cuts n clients chosen by rng off Redis, current holders
// first, until HealClients: their commands (their watchdog's too) are not
// sent, and time out after the op timeout unless the cut heals first
// (then they go, as TCP would resend them). It returns the process ids.
func (r *Runner) cutClients(rng *rand.Rand, n int) []int {
	f := r.faults
	var ids []int
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	for _, s := range f.holdersFirst(rng, n) {
		if f.cut[s] == nil {
			f.cut[s] = make(chan struct{})
		}
		ids = append(ids, int(f.ids[s].Load()))
	}
	f.faulty.Store(true)
	return ids
}

// clientClock is a client's own clock gone wrong: from start (history
// clock, ns) it runs at rate and is jump behind.
type clientClock struct {
	start int64
	rate  float64
	jump  time.Duration
}

// behind is how far the clock is behind the true time at t.
func (c clientClock) behind(t int64) int64 {
	if t < c.start {
		return 0
	}
	return int64(c.jump) + int64((1-c.rate)*float64(t-c.start))
}

// skewClients makes the clocks of n clients chosen by rng (holders first)
// run at rate and jump back by jump, until HealClients: the clock they
// time their leases by, so that a slow or set-back one keeps its client
// in its critical section after its lease expired. It returns the ids.
func (r *Runner) skewClients(rng *rand.Rand, n int, rate float64, jump time.Duration) []int {
	f := r.faults
	now := r.now()
	var ids []int
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	for _, s := range f.holdersFirst(rng, n) {
		f.clocks[s] = clientClock{start: now, rate: rate, jump: jump}
		ids = append(ids, int(f.ids[s].Load()))
		select {
		case f.poke[s] <- struct{}{}: // a holder re-reads its clock
		default:
		}
	}
	f.faulty.Store(true)
	return ids
}

// drift is how much further behind the client's clock is at t than at
// from: what it misses of the time its lease has run since from.
func (f *faults) drift(id int, from, t int64) int64 {
	if !f.faulty.Load() {
		return 0
	}
	f.cutMu.Lock()
	c, ok := f.clocks[f.slot(id)]
	f.cutMu.Unlock()
	if !ok {
		return 0
	}
	return c.behind(t) - c.behind(from)
}

// cutOff returns the channel closed when the client's cut heals, or nil.
func (f *faults) cutOff(id int) chan struct{} {
	if id < 0 || !f.faulty.Load() {
		return nil
	}
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	return f.cut[f.slot(id)]
}

// ErrCutOff is what a command of a client cut off from Redis returns when
// its op timeout passes: it was never sent.
var ErrCutOff = errors.New("i/o timeout: client cut off from redis (client-partition)")

// waitCut holds a cut-off client's command until the cut heals (nil: send
// it) or its op timeout or ctx ends (ErrCutOff).
func (f *faults) waitCut(ctx context.Context, healed chan struct{}) error {
	t := time.NewTimer(f.opTimeout)
	defer t.Stop()
	select {
	case <-healed:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	f.cutOps.Add(1)
	return ErrCutOff
}

// HealClients disarms every client fault not yet taken (a client that has
// died stays dead) and heals every cut.
func (r *Runner) HealClients() {
	r.faults.cutMu.Lock()
	for s, ch := range r.faults.cut {
		close(ch)
		delete(r.faults.cut, s)
	}
	clear(r.faults.clocks)
	r.faults.faulty.Store(false)
	r.faults.cutMu.Unlock()
	r.faults.cancels.heal()
	r.faults.starves.heal()
	r.faults.pools.heal()
	r.faults.drops.on.Store(false)
	for s := 0; s < r.faults.slots; s++ {
		r.faults.pause[s].Store(0)
		r.faults.holdPause[s].Store(0)
		r.faults.crash[s].CompareAndSwap(crashArmed, crashNone)
		r.faults.crash[s].CompareAndSwap(crashDue, crashNone)
	}
}

// Instrument gives a lock's Env the clients' side of the faults: Wait,
// which holds a paused client's background work, and, when crashes is
// set (a fault crashes, cuts off or cancels clients), the go-redis hooks
// that kill a crashed client's commands, hold a cut-off one's, hold a
// cancelled one's reply (cancel.go), a starved one's renewals
// (starve.go), and drop pub/sub messages (drop_unlock.go). The lock is built with env before Run.
func (r *Runner) Instrument(env *lockimpl.Env, crashes bool) {
	env.Wait = waitGate
	env.ClientLag = r.clientLag
	r.faults.opTimeout = cmp.Or(env.OpTimeout, 3*time.Second) // go-redis's default read timeout
	if crashes {
		env.Hooks = append(env.Hooks, crashHook{r.faults}, cancelHook{r.faults.cancels}, starveHook{r.faults}, dropHook{r.faults})
		if r.faults.pools.size > 0 {
			// Only a run whose clients have pools of their own meets
			// the pool fault: the rest skip its note on every command.
			env.Hooks = append(env.Hooks, poolHook{r.faults})
		}
	}
}

// takePause returns and disarms the client's armed pause (inSection: the
// one inside a critical section).
func (r *Runner) takePause(c *client, inSection bool) time.Duration {
	if inSection {
		return time.Duration(r.faults.holdPause[r.faults.slot(c.id)].Swap(0))
	}
	return time.Duration(r.faults.pause[r.faults.slot(c.id)].Swap(0))
}

// pauseClient stops the client, and its lock's background work, for d.
func (r *Runner) pauseClient(ctx context.Context, c *client, d time.Duration) {
	g := &r.faults.gates[r.faults.slot(c.id)]
	g.pause()
	defer g.resume()
	if r.procs != nil {
		defer r.procs.Stop(c.id)() // the client's lock process stops too
	}
	r.counters.paused.Add(1)
	ctxwait.Sleep(ctx, d)
}

// crashProcess kills the client's lock process if the client is armed to
// crash and the lock runs one process per client: a holder dies before its
// release. It says whether it did.
func (r *Runner) crashProcess(c *client) bool {
	if r.procs == nil {
		return false
	}
	s := r.faults.slot(c.id)
	if r.faults.crash[s].Load() == crashNone || r.faults.ids[s].Load() != int64(c.id) {
		return false
	}
	r.procs.Kill(c.id)
	r.die(c)
	return true
}

// die replaces a crashed client by a new process in its slot: a crashed
// process never comes back, and its lease is never released.
func (r *Runner) die(c *client) {
	r.counters.crashed.Add(1)
	s := r.faults.slot(c.id)
	c.id += r.faults.slots
	r.faults.ids[s].Store(int64(c.id)) // from here the old id reads as dead
	r.faults.crash[s].Store(crashNone)
	if r.procs != nil {
		// Its successor's process starts before its first op (an error
		// comes back at that op).
		_ = r.procs.Start(c.id)
	}
}
