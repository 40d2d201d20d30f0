package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
)

// TopologyFor picks the topology s runs the lock of p on, where p.Where
// says, or says why s does not apply: its faults must reach the lock's
// own client (Profile.OwnClient), its servers be ones lockcheck runs
// where they act on servers, and its topology be the lock's.
func (s Scenario) TopologyFor(p Profile) (string, string) {
	if p.OwnClient && s.Nemesis.FitsOwnClient(p.Name, p.PerClient) != nil {
		return "", "its faults act inside lockcheck's own Redis client, which the lock does not use (it has a client of its own)"
	}
	lockTopo, where := p.Topology, p.Where
	if lockTopo == "" && p.Waits && s.Topology == "" {
		lockTopo = cluster.Sentinel // WAIT needs replicas
	}
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

// ClusterFor is where a run of s goes: the topology and server settings s
// wants, on the backend of where (an external Redis as it is).
func (s Scenario) ClusterFor(where cluster.Config, topo string) cluster.Config {
	if where.Backend == cluster.External {
		return where
	}
	where.Topology, where.Persistence, where.ReplicationLag, where.Failover = topo, s.Persistence, s.ReplicationLag, s.Failover
	return where
}

// Check is how a scenario's run is checked: check, with the defaults of
// faulted runs on a busy machine.
func Check(check checker.Options, backend string) checker.Options {
	if check.ClockTolerance == 0 && backend != cluster.External {
		// Two busy cores: a starved Redis was measured to judge expiry
		// 25-50 ms behind our clock.
		check.ClockTolerance = 50 * time.Millisecond
	}
	// A key not decided by then is unknown.
	check.Timeout = cmp.Or(check.Timeout, 2*time.Minute)
	return check
}

// DownFault is the fault of s that takes down every node a lock on topo
// has (kill-redis on a single node), if it has one.
func (s Scenario) DownFault(topo string) (string, bool) {
	if topo != cluster.Single || !slices.Contains(s.Nemesis.Faults, "kill-redis") {
		return "", false
	}
	return "kill-redis", true
}
