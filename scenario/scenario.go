// Package scenario holds lockcheck's scenarios, one a file with a
// registry line, as nemesis holds its faults: a workload, a fault
// schedule, the Redis set-up they need, and what a run of them must be
// seen to do for its verdict to count. verify runs a battery of them
// (Battery), matrix a column each (MatrixColumns); each has one name and
// one definition.
package scenario

import (
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Scenario is one scenario.
type Scenario struct {
	Name        string
	Description string
	Nemesis     nemesis.Config
	Persistence string
	// RestartDelay is how long kill-redis keeps a node down.
	RestartDelay time.Duration
	// Topology is the topology the scenario needs ("": the lock's own);
	// Only lists the topologies it applies to ("": any).
	Topology string
	Only     []string
	// Workload adjusts Base.
	Workload func(*workload.Config)
	// ReplicationLag for the sentinel scenarios; Failover how their
	// failovers come about (cluster.FailoverForce, the default, or
	// cluster.FailoverDetect).
	ReplicationLag time.Duration
	Failover       string

	// Requires are the coverage figures the scenario must reach for its
	// verdict to count: the failure it exists for got its chance.
	Requires checker.Coverage
	// Server marks a server-fault scenario (the deployment table): its
	// breaks are findings unless required.
	Server bool
	// Pauses: clients are paused past their TTL, so mutual exclusion
	// at the resource needs fencing: a break is a finding unless
	// --require fencing.
	Pauses bool
	// Extends: clients keep their leases alive by extends every TTL/3,
	// unless the lock has a watchdog of its own (such a scenario carries
	// extendsLeases in Needs: n/a for a lock with neither).
	Extends bool
	// Overrun: holds outlive the TTL on purpose, so releases come after
	// expiry, and a run short of them is sized to the lock's latency too
	// (such a scenario carries releasesLate in Needs: n/a for a lock that
	// keeps its leases alive by itself, whose releases are never late).
	Overrun bool
	// Needs are what the scenario needs of the lock under test beyond
	// its topology, each with its n/a reason (Need, Fits), in the file of
	// what it decides.
	Needs []Need
	// RedlockClients, if set, is the client count for a Redlock lock: an
	// op is a round trip to each of five nodes, and two cores serve fewer
	// clients within redsync's per-node timeout (5% of the TTL).
	RedlockClients int
	// PermitClients, if set, is the client count for a lock whose model
	// leaves more open than a mutex's (Profile.OpenFacts): a semaphore's
	// places every acquire in flight on a key, and a key of k permits has
	// more that the facts leave open (which of k leases a grant needed
	// gone, where in its interval each refusal found k held); a reentrant
	// lock's must order its refusals in the clock tolerance around each
	// lease's end; a read-write lock's, its readers granted around a
	// writer (at 200 clients on 5 keys, readers also keep writers out:
	// contention met 73 of the 100 reader_tried_over_writer it requires
	// in two runs, at 100 clients 152).
	PermitClients int
	// ProcessWorkload, if set, adjusts the workload for a lock run as a
	// process per client (Profile.PerClient), after Workload: each run
	// starts a process of the lock's language a client (a Python
	// interpreter and its imports, a quarter of a second of CPU), and
	// two cores start and serve fewer within the scenario's share of
	// the budget.
	ProcessWorkload func(*workload.Config)
	// ShapeWorkload, if set, adjusts the workload for the lock's shape
	// (Profile.Shape), last (after the user's flags, which it reads):
	// what a shape's run needs for the scenario's chance to come, said
	// in the scenario's file.
	ShapeWorkload func(*workload.Config, Profile)
	// Breaks says what a break in this scenario means where it is a
	// finding (the fault's known effect on a lock without the defence).
	Breaks string
}

// Base is the workload every scenario adjusts: short leases, so that a
// run of a few seconds holds hundreds of them.
var Base = workload.Config{Clients: 20, Keys: 5, TTL: 200 * time.Millisecond, Hold: 100 * time.Millisecond,
	HoldDist: workload.HoldExp, Retry: workload.RetryBackoff, OpTimeout: 500 * time.Millisecond,
	Margin: 30 * time.Millisecond, Duration: 6 * time.Second}

// serverWorkload is the server scenarios' workload: leases of a second,
// held most of it, so that a fault every second or two lands on one.
func serverWorkload(w *workload.Config) {
	w.TTL, w.Hold, w.Margin, w.OpTimeout, w.Duration = time.Second, 700*time.Millisecond, 100*time.Millisecond, time.Second, 8*time.Second
}

// stallWorkload is the pause-redis and lost-reply scenarios' workload:
// few keys, so that the acquires a stall leaves indeterminate contend.
func stallWorkload(w *workload.Config) { w.Keys, w.Duration = 3, 8*time.Second }

// then is a workload adjustment: first, then next.
func then(first, next func(*workload.Config)) func(*workload.Config) {
	return func(w *workload.Config) { first(w); next(w) }
}

// MovesMaster says whether s's faults promote a replica (failover,
// partition): a lock's clients then follow the new master each on its
// own, and a lock that is a process of its own runs one per client, as
// it would in production (one process for all would move every holder
// at once).
func (s Scenario) MovesMaster() bool {
	return slices.ContainsFunc(s.Nemesis.Faults, func(f string) bool { return f == "failover" || f == "partition" })
}

// onServer is s on the server workload (serverWorkload, then s's own
// adjustments).
func onServer(s Scenario) Scenario {
	if s.Workload == nil {
		s.Workload = serverWorkload
	} else {
		s.Workload = then(serverWorkload, s.Workload)
	}
	return s
}

// killEvery is the kill scenarios' schedule: a kill every 1.5 s after
// the last one healed. A kill lasts kill-redis's own hold (a restart at
// once, or after RestartDelay), so its window's length in the schedule
// only spaces the windows' starts: at the default 2 s (0ff2d01's derived
// schedule) they came every 3.5 s, an 8 s run held two where kill-none
// and kill-always require three hits, and a battery past its budget
// (redis-py's Lock, a process per client, on a loaded machine) ended
// unknown (TestBattery_RunHoldsItsHits).
var killEvery = nemesis.Config{Faults: []string{"kill-redis"}, Interval: 1500 * time.Millisecond, Duration: time.Millisecond}

// Gates says whether a break of the lease contract, and of mutual
// exclusion, fails verify in s under require (verify's --require: a
// scenario's name, "server", "fencing"): the lease contract in any
// client-side scenario, mutual exclusion in one without pauses; findings
// otherwise, unless required.
func (s Scenario) Gates(require []string) (lease, mutex bool) {
	named := slices.Contains(require, s.Name) || (s.Server && slices.Contains(require, "server"))
	lease = !s.Server || named
	mutex = (!s.Server && !s.Pauses) || named || (s.Pauses && slices.Contains(require, "fencing"))
	return lease, mutex
}
