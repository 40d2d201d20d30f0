package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// The shapes: Mutex, a lock that one holder at a time holds; Semaphore,
// one of Permits holders at a time; Reentrant, one owner at a time,
// which may acquire again while it holds (--reenter).
const (
	Mutex     = "mutex"
	Semaphore = "semaphore"
	ReadWrite = "rwlock"
	Reentrant = "reentrant"
)

// Profile is what a battery knows of the lock under test, resolved once
// (ProfileOf, then what the battery's config declares) and told what its
// runs show (Scope, OwnTimeout, KeyTTL). A scenario asks it whether it
// applies (Fits); verify asks the scenario.
type Profile struct {
	// Name is the lock's name.
	Name string
	// Shape is the lock's shape (Mutex, Semaphore), and Permits a
	// semaphore's permits a key (1 for a mutex; 0 reads as 1).
	Shape   string
	Permits int
	// Topology is the one the lock needs ("": any single-master one);
	// Where the Redis the battery runs on (lockcheck's own servers, or
	// an external Redis, which is what it is).
	Topology string
	Where    cluster.Config
	// OwnClient: the lock talks to Redis through a client of its own
	// (lockimpl.Entry.OwnClient), which faults inside lockcheck's client
	// cannot reach; Waits: its client sends WAIT (lockimpl.Entry.Waits).
	OwnClient, Waits bool
	// PerClient: one process per client, so that pauses and crashes stop
	// the client's process, the lock's own renewals with it.
	PerClient bool
	// Renews: the lock keeps its leases alive itself (a watchdog).
	Renews bool
	// NoExtend: the lock has no extend (Laravel's cache lock).
	NoExtend bool
	// Blocking: its acquires wait inside the lock (--wait); Subscribes:
	// its waiters are woken by pub/sub through lockcheck's client
	// (lockimpl.Entry.Subscribes).
	Blocking, Subscribes bool
	// Scope is why the lock's leases are scopes (held by a connection, a
	// subscription: no deadline), once a run said so ("": leases with a
	// deadline, as far as the runs showed).
	Scope string
	// OwnTimeout is the lock's own command timeout, as its last run
	// declared it (lockimpl.OwnTimeouter; 0: none).
	OwnTimeout time.Duration
	// KeyTTL is how long the lock's keys lived where a run asked for
	// AskedTTL, once a run was read for it (a lock whose TTL unit is a
	// second sets a 1 s key for 100 ms).
	KeyTTL, AskedTTL time.Duration
}

// ProfileOf is the profile lock e declares, run on where.
func ProfileOf(e lockimpl.Entry, where cluster.Config) Profile {
	return Profile{Name: e.Name, Shape: Mutex, Permits: 1, Topology: e.Topology, Where: where, OwnClient: e.OwnClient, Waits: e.Waits,
		PerClient: e.PerClient, Renews: e.Watchdog, Subscribes: e.Subscribes}
}

// OpenFacts says the lock's model leaves more open per op in flight than
// a mutex's (a semaphore of k > 1, a reentrant lock, a read-write lock):
// a scenario with PermitClients runs that many clients for it.
func (p Profile) OpenFacts() bool {
	return p.Permits > 1 || p.Shape == Reentrant || p.Shape == ReadWrite
}

// Deadline says whether the lock's leases have a deadline, as far as its
// runs showed (not a scope).
func (p Profile) Deadline() bool { return p.Scope == "" }

// A Need is one thing a scenario needs of the lock under test, written
// beside what it decides and carried in the scenario's Needs: given s,
// the lock's profile and the topology s runs it on, why s is n/a for it
// ("" where the lock has what s needs), and the figures s then requires
// (req, those so far, where the need changes nothing).
type Need func(s Scenario, p Profile, topo string, req checker.Coverage) (na string, _ checker.Coverage)

// Fits says where s runs the lock of p (its topology), and what s then
// requires of it, or why s is n/a for it: its topology (TopologyFor),
// then each of its own Needs in order, then what every scenario needs
// (shared), the first n/a found deciding.
func (s Scenario) Fits(p Profile) (topo, na string, req checker.Coverage) {
	topo, na = s.TopologyFor(p)
	if na != "" {
		return topo, na, s.Requires
	}
	req = s.Requires
	for _, need := range append(append([]Need{}, s.Needs...), shared...) {
		if na, req = need(s, p, topo, req); na != "" {
			return topo, na, s.Requires
		}
	}
	return topo, "", req
}

// shared are the needs of every scenario, after its own: what its
// figures and faults need of a lock whose leases are scopes (scope.go).
var shared = []Need{leaseScopes, reentersUnwatched, waitsUnwatched}
