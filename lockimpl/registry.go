package lockimpl

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/ext"
)

// Factory builds a Locker for one run.
type Factory func(env Env) (Locker, error)

// Entry is one registered lock.
type Entry struct {
	Name        string
	Description string
	// Broken marks the classic mistakes that exist to prove the checkers.
	Broken bool
	// Topology is the one the lock needs ("": any single-master one).
	Topology string
	// OwnClient: the lock talks to Redis through a client of its own (a
	// process of the user's), not through go-redis clients built from
	// Env, so faults that act inside those (Env.Hooks, client proxies)
	// cannot reach it.
	OwnClient bool
	// PerClient: one process per client (process.PerClientEntry), so
	// pauses and crashes act on the client's process.
	PerClient bool
	// Watchdog: the lock keeps its leases alive on its own (lockcheck
	// verify then adds no client-side extends).
	Watchdog bool
	// Waits: the lock sends WAIT (an external Redis's user must be
	// allowed it). With no Topology it runs on sentinel unless told
	// cluster: WAIT on a node with no replica never succeeds.
	Waits bool
	// Subscribes: the lock's waiters (Waiter) are woken by pub/sub
	// messages they subscribe to through the client Env gives them, which
	// the drop-unlock fault can cut.
	Subscribes bool
	// Shape is the lock's shape (ShapeSemaphore, ShapeRWLock; "": a
	// mutex), as lockcheck list shows it: what its lock is
	// (ShapeOfLock).
	Shape   string
	Factory Factory
	// CheckTTL, if set, says why the lock cannot run with a TTL (a spec
	// with {ttl_s} needs whole seconds). Every path checks every TTL it
	// will use before anything starts.
	CheckTTL func(time.Duration) error
	// Version names the version of a user's lock (run.json's
	// lock_version).
	Version string
}

// FitsTTL says why e cannot run with ttl, if it cannot.
func (e Entry) FitsTTL(ttl time.Duration) error {
	if e.CheckTTL == nil {
		return nil
	}
	return e.CheckTTL(ttl)
}

// Registry maps lock names to factories. The zero value is empty and ready.
type Registry struct {
	m map[string]Entry
}

// Register adds or replaces a lock.
func (r *Registry) Register(e Entry) {
	if r.m == nil {
		r.m = map[string]Entry{}
	}
	r.m[e.Name] = e
}

// Lookup returns the named lock.
func (r *Registry) Lookup(name string) (Entry, error) {
	e, ok := r.m[name]
	if !ok {
		return Entry{}, fmt.Errorf("unknown lock %q (known: %s; see lockcheck list)", name, strings.Join(r.Names(), ", "))
	}
	return e, nil
}

// All returns every lock, correct ones first, each group by name.
func (r *Registry) All() []Entry {
	es := make([]Entry, 0, len(r.m))
	for _, e := range r.m {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Broken != es[j].Broken {
			return !es[i].Broken
		}
		return es[i].Name < es[j].Name
	})
	return es
}

// Names returns the lock names in All order.
func (r *Registry) Names() []string {
	var ns []string
	for _, e := range r.All() {
		ns = append(ns, e.Name)
	}
	return ns
}

var added ext.Added[Entry]

// Register adds a lock to every registry All returns from here on,
// until the func it returns unregisters it (a test's throwaway lock, a
// program's own that embeds lockcheck).
func Register(e Entry) (unregister func()) { return added.Add(e) }

// All returns a new registry with every lock of this package, and
// those Register added. To add one: a file with its Locker and its Entry,
// and its name in the list here.
func All() *Registry {
	r := &Registry{}
	for _, e := range added.With([]Entry{setnxEntry, watchdogEntry, fencedEntry, setnxWaitEntry, setnxWaitAllEntry, redislockEntry, redlockEntry, redlockGuardedEntry, redsyncEntry, semaphoreEntry, reentrantEntry, rwlockEntry, setnxBlockEntry, pubsubWaitEntry,
		brokenSetNXExpireEntry, brokenFixedValueEntry, brokenDelReleaseEntry, brokenGetDelReleaseEntry, brokenNoTTLEntry, brokenCheckThenSetEntry,
		brokenResendEntry, brokenWatchdogSwallowEntry, brokenFailOpenEntry, brokenRedlockExtendCleanupEntry, brokenWaitIgnoredEntry, brokenWatchdogLeakEntry, brokenCancelKeepEntry,
		brokenWatchdogNoLossCheckEntry,
		brokenWatchdogPoolWaitEntry,
		brokenSemaphoreCheckAddEntry, brokenSemaphoreCounterEntry, brokenSemaphoreClientClockEntry, brokenReentrantReleaseDeletesEntry, brokenReentrantNoOwnerCheckEntry, brokenRWLockWriterIgnoresReadersEntry, brokenRWLockReadersIgnoreWriterEntry, brokenWaitSlowPollEntry, brokenWaitSubscribeAfterTryEntry}) {
		r.Register(e)
	}
	return r
}
