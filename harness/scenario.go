package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Scenario is a fault schedule, the Redis set-up it needs and how it
// adjusts the workload: a column of lockcheck matrix, and the part of a
// verify scenario that runs (VerifyScenario).
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
	// Workload adjusts the pipeline's base workload (MatrixBase,
	// VerifyBase).
	Workload func(*workload.Config)
	// ReplicationLag for the sentinel scenarios.
	ReplicationLag time.Duration
}

// run is the run of s for the lock of base (its lock, registry, check
// and cluster settings) on topo, with workload w and seed: a verify
// scenario's attempt and a matrix cell alike, named name, under outDir.
func (s Scenario) run(base Config, topo string, w workload.Config, seed int64, name, outDir string, args []string) Config {
	w.Seed = seed
	n := s.Nemesis
	n.Seed = seed
	base.Name, base.OutDir, base.Workload, base.Nemesis, base.RestartDelay = name, outDir, w, n, s.RestartDelay
	base.Cluster = scenarioCluster(base.Cluster, topo, s)
	base.Check = scenarioCheck(base.Check, base.Cluster.Backend)
	base.Args = append(args, fmt.Sprintf("seed=%d", seed))
	return base
}

// named is a scenario of either pipeline: the Scenario it runs.
type named interface{ base() Scenario }

func (s Scenario) base() Scenario { return s }

// The scenarios both pipelines run, each defined once: verify adds its
// gates and its workload's base to them.
var (
	failoverScenario = Scenario{Name: "failover", Description: "sentinel: kill the master with replication 500 ms behind; a replica is promoted",
		Nemesis:  nemesis.Config{Faults: []string{"failover"}, Interval: 3 * time.Second, Duration: 6 * time.Second},
		Topology: cluster.Sentinel, ReplicationLag: 500 * time.Millisecond,
		Workload: func(w *workload.Config) {
			w.TTL, w.Hold, w.Keys, w.Duration = 10*time.Second, 3*time.Second, 40, 12*time.Second
		}}
	partitionScenario = Scenario{Name: "partition", Description: "sentinel: the master cut off from its replicas and sentinels while clients still reach it; a replica is promoted (split brain)",
		Nemesis:  nemesis.Config{Faults: []string{"partition"}, Interval: 3 * time.Second, Duration: 6 * time.Second},
		Topology: cluster.Sentinel, Workload: failoverScenario.Workload}
	clockQuorumScenario = Scenario{Name: "clock-quorum", Description: "Kleppmann: 2 of 5 masters down, then back empty while a node of the bare majority jumps 2 TTL forward",
		Nemesis: nemesis.Config{Faults: []string{"clock-quorum"}, Interval: time.Second, Duration: 2 * time.Second},
		Only:    []string{cluster.Redlock}}
	// Leases of 6 s held 4 s on 10 keys: a lease taken before the window
	// is on a bare majority once two nodes are down, and on two nodes
	// after half-time; a client's pool refuses new connections to a
	// restarted node for a second after it saw it refuse one (go-redis's
	// dial back-off), so the lease's holder must still hold it more than
	// a second after half-time for the empty nodes to be won meanwhile.
	killQuorumScenario = Scenario{Name: "kill-quorum", Description: "redsync #186: 2 of 5 masters down, then back empty while a node of the bare majority restarts without persistence; leases of 6 s held 4 s on 10 keys",
		Nemesis: nemesis.Config{Faults: []string{"kill-quorum"}, Interval: time.Second, Duration: 2 * time.Second},
		Only:    []string{cluster.Redlock}, Persistence: "none",
		Workload: func(w *workload.Config) {
			w.Keys, w.TTL, w.Hold, w.HoldDist, w.Duration = 10, 6*time.Second, 4*time.Second, workload.HoldFixed, 12*time.Second
		}}
)

// killDelayedScenario is kill-redis every interval, each node restarted
// without persistence once every lease it held (of TTL ttl) has expired.
func killDelayedScenario(ttl, every time.Duration) Scenario {
	return Scenario{Name: "kill-delayed", Description: "kill-redis, restarted without persistence after TTL + 500 ms (one node down at a time)",
		Nemesis: nemesis.Config{Faults: []string{"kill-redis"}, Interval: every}, Persistence: "none", RestartDelay: ttl + 500*time.Millisecond}
}

// killExtendScenario is kill-delayed under holders that keep their
// leases alive: every lease live when a node goes down is extended while
// it is down (its holds of 3 s outlast the 1.5 s the node stays down, and
// extends come every TTL/3), so a lock whose extend mishandles a node
// that errs gets its chance at every kill that hits a lease.
func killExtendScenario() Scenario {
	s := killDelayedScenario(time.Second, killEvery.Interval)
	s.Name = "kill-extend"
	s.Description = "kill-redis, restarted without persistence after TTL + 500 ms, under holders of 3 s kept alive by extends every TTL/3: extends while a node is down"
	s.Workload = func(w *workload.Config) { w.Keys, w.Hold, w.HoldDist = 20, 3*time.Second, workload.HoldFixed }
	return s
}

// then is a workload adjustment: first, then next.
func then(first, next func(*workload.Config)) func(*workload.Config) {
	return func(w *workload.Config) { first(w); next(w) }
}

// pickScenarios returns the named scenarios of all, in all's order (all
// of them if names is empty).
func pickScenarios[S named](all []S, names []string) ([]S, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []S
	for _, n := range names {
		if !slices.ContainsFunc(all, func(s S) bool { return s.base().Name == n }) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(scenarioNames(all), ", "))
		}
	}
	for _, s := range all {
		if slices.Contains(names, s.base().Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

func scenarioNames[S named](ss []S) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.base().Name)
	}
	return names
}

// cellTopology picks the cell's topology, or says why it does not apply.
func cellTopology(e lockimpl.Entry, perClient bool, s Scenario, where cluster.Config) (string, string) {
	if e.OwnClient && s.Nemesis.FitsOwnClient(e.Name, perClient) != nil {
		return "", "its faults act inside lockcheck's own Redis client, which the lock does not use (it has a client of its own)"
	}
	lockTopo := e.Topology
	if where.Backend == cluster.External {
		if err := s.Nemesis.FitsBackend(cluster.External); err != nil {
			return "", "its faults act on the Redis servers: an external Redis meets only the client faults"
		}
		// The external Redis is what it is: the run finds its topology.
		if have := where.External.Topology(); (lockTopo == "" && have == cluster.Redlock) || (lockTopo != "" && lockTopo != have) {
			return "", fmt.Sprintf("the lock needs topology %s; the external Redis is %s", cmp.Or(lockTopo, "single, sentinel or cluster"), have)
		}
		return "", ""
	}
	topo := lockTopo
	if s.Topology != "" {
		if lockTopo != "" && lockTopo != s.Topology {
			return "", fmt.Sprintf("needs topology %s; the lock needs %s", s.Topology, lockTopo)
		}
		topo = s.Topology
	}
	if topo == "" {
		topo = cluster.Single
	}
	if len(s.Only) > 0 && !slices.Contains(s.Only, topo) {
		return topo, "only for topology " + strings.Join(s.Only, ", ")
	}
	return topo, ""
}

// scenarioCluster is where a run of scenario s goes: the topology and
// server settings s wants, on the backend of where (an external Redis
// as it is).
func scenarioCluster(where cluster.Config, topo string, s Scenario) cluster.Config {
	if where.Backend == cluster.External {
		return where
	}
	where.Topology, where.Persistence, where.ReplicationLag = topo, s.Persistence, s.ReplicationLag
	return where
}

// scenarioCheck is how a scenario's run (verify's or a matrix cell's) is
// checked: check, with the defaults of faulted runs on a busy machine.
func scenarioCheck(check checker.Options, backend string) checker.Options {
	if check.ClockTolerance == 0 && backend != cluster.External {
		// Two busy cores: a starved Redis was measured to judge expiry
		// 25-50 ms behind our clock.
		check.ClockTolerance = 50 * time.Millisecond
	}
	// A key not decided by then is unknown.
	check.Timeout = cmp.Or(check.Timeout, 2*time.Minute)
	return check
}
