// Package battery runs batteries of runs, each through harness.Run:
// verify (every scenario of the battery against one lock, until each
// meets its coverage), matrix (locks × scenarios, a verdict a cell) and
// bench (a contention sweep).
package battery

import (
	"fmt"
	"path/filepath"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// workloadOf is scenario s's workload for a lock on topo: the base, s's
// adjustments (its client count for Redlock, its workload for a lock
// run as a process per client and for the lock's shape), then adjust's (the user's --clients, --ttl, ...),
// if set.
// A lock that keeps its leases alive itself (p.Renews) gets no
// client-side extends.
func workloadOf(s scenario.Scenario, topo string, p scenario.Profile, adjust func(*workload.Config)) workload.Config {
	w := scenario.Base
	if s.Workload != nil {
		s.Workload(&w)
	}
	if s.RedlockClients > 0 && topo == cluster.Redlock {
		w.Clients = s.RedlockClients
	}
	if s.ProcessWorkload != nil && p.PerClient {
		s.ProcessWorkload(&w)
	}
	if s.PermitClients > 0 && p.OpenFacts() {
		w.Clients = min(w.Clients, s.PermitClients)
	}
	if s.Extends && !p.Renews {
		w.ExtendEvery = w.TTL / 3
	}
	if adjust != nil {
		adjust(&w)
	}
	if s.ShapeWorkload != nil {
		s.ShapeWorkload(&w, p)
	}
	return w
}

// ScenarioRun is the run of s for the lock of base (its lock, registry,
// check and cluster settings) on topo with workload w and seed: a verify
// scenario's attempt, a matrix cell and a row of the fault table
// (internal/faultrun) alike, named name, under outDir.
func ScenarioRun(s scenario.Scenario, base harness.Config, topo string, w workload.Config, seed int64, name, outDir string, args []string) harness.Config {
	w.Seed = seed
	n := s.Nemesis
	n.Seed = seed
	base.Name, base.OutDir, base.Workload, base.Nemesis, base.RestartDelay = name, outDir, w, n, s.RestartDelay
	base.Cluster = s.ClusterFor(base.Cluster, topo)
	base.Check = scenario.Check(base.Check, base.Cluster.Backend)
	base.Args = append(append([]string{}, args...), fmt.Sprintf("seed=%d", seed))
	return base
}

// verifyRun is the run config of verify's attempt of s with seed, for
// the lock of profile p. Where verify has a lock of a process per client
// for the client faults (ClientFaultLock), p says PerClient; the
// scenarios it does not run that lock in run one process, and are sized
// as such.
func verifyRun(cfg VerifyConfig, s scenario.Scenario, topo string, p scenario.Profile, seed int64, dir string) harness.Config {
	rc := cfg.Lock
	if cfg.ClientFaultLock != nil {
		p.PerClient = s.Nemesis.ActsOnClients() || s.MovesMaster()
		if p.PerClient {
			rc = *cfg.ClientFaultLock
		}
	}
	w := workloadOf(s, topo, p, cfg.Workload)
	return ScenarioRun(s, rc, topo, w, seed, s.Name, filepath.Join(dir, "runs"), append(append([]string{}, cfg.Args...), "scenario="+s.Name))
}
