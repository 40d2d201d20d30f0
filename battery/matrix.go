package battery

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// MatrixLocks are the default rows.
var MatrixLocks = []string{"setnx", "fenced", "redlock", "redsync"}

// MatrixConfig is one matrix run.
type MatrixConfig struct {
	Locks []string
	// Registry has the locks (nil: lockimpl.All()); a user's specs
	// and lock processes are registered there.
	Registry  *lockimpl.Registry
	Scenarios []string
	OutDir    string
	Seed      int64
	// Duration overrides each cell's run length (0: the scenario's).
	Duration time.Duration
	// TTL overrides each cell's lock TTL (0: the scenario's).
	TTL time.Duration
	// Expect maps "lock scenario" to the verdict the cell must reach.
	Expect map[string]checker.Verdict
	// Attempts: a cell expected invalid that came out valid is run again
	// with the next seed, up to this many runs in all (fault timing may
	// miss the window); one expected valid is never re-run, since a
	// violation is evidence.
	Attempts int
	Check    checker.Options
	// Cluster is where the cells run: Backend and, for an external Redis,
	// External (cells whose faults act on the servers are n/a there).
	Cluster  cluster.Config
	Progress io.Writer
	Args     []string
}

// MatrixResult is a matrix run.
type MatrixResult struct {
	Dir       string
	Cells     []report.MatrixCell
	Scenarios []scenario.Scenario
	Locks     []string
}

// Mismatches are the cells that differ from the expectation.
func (m *MatrixResult) Mismatches() []report.MatrixCell {
	var out []report.MatrixCell
	for _, c := range m.Cells {
		if !c.Matches() {
			out = append(out, c)
		}
	}
	return out
}

// Matrix runs every lock under every scenario, one cell at a time, and
// writes matrix.md and matrix.html next to the cells' runs.
func Matrix(ctx context.Context, cfg MatrixConfig) (*MatrixResult, error) {
	if len(cfg.Locks) == 0 {
		cfg.Locks = MatrixLocks
	}
	scen, err := pickColumns(cfg.Scenarios)
	if err != nil {
		return nil, workload.ConfigErr(err)
	}
	if cfg.Registry == nil {
		cfg.Registry = lockimpl.All()
	}
	reg := cfg.Registry
	var ttls []time.Duration
	for _, s := range scen {
		ttls = append(ttls, workloadOf(s, "", scenario.Profile{}, cfg.adjust).TTL)
	}
	if err := checkLocks(reg, cfg.Locks, ttls); err != nil {
		return nil, err
	}
	if cfg.Attempts < 1 {
		cfg.Attempts = 1
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	dir, err := harness.NewRunDir(cfg.OutDir, "matrix")
	if err != nil {
		return nil, err
	}
	res := &MatrixResult{Dir: dir, Scenarios: scen, Locks: cfg.Locks}
	cfg.runCells(ctx, res)
	if err := res.write(); err != nil {
		return res, err
	}
	_ = harness.UpdateLatest(cfg.OutDir, dir)
	return res, nil
}

// runCells runs res's cells, lock by lock.
func (cfg MatrixConfig) runCells(ctx context.Context, res *MatrixResult) {
	scen, dir := res.Scenarios, res.Dir
	for _, lock := range cfg.Locks {
		e, _ := cfg.Registry.Lookup(lock)
		for _, s := range scen {
			cell := report.MatrixCell{Lock: lock, Scenario: s.Name, Expected: cfg.Expect[lock+" "+s.Name]}
			cell.Topology, cell.NA = s.TopologyFor(scenario.ProfileOf(e, cfg.Cluster))
			if cell.NA == "" && ctx.Err() == nil {
				runCell(ctx, cfg, s, &cell, dir)
			} else if cell.NA == "" {
				cell.NA = "not run (interrupted)"
			}
			report.TextMatrixProgress(cfg.Progress, cell)
			res.Cells = append(res.Cells, cell)
		}
	}
}

// checkLocks looks up each lock in reg and checks that it can run with
// every TTL of ttls, before anything starts (a spec with {ttl_s} needs
// whole seconds).
func checkLocks(reg *lockimpl.Registry, locks []string, ttls []time.Duration) error {
	for _, l := range locks {
		e, err := reg.Lookup(l)
		if err != nil {
			return workload.ConfigErr(err)
		}
		for _, ttl := range ttls {
			if err := e.FitsTTL(ttl); err != nil {
				return workload.ConfigErr(fmt.Errorf("lock %s: %w", l, err))
			}
		}
	}
	return nil
}

// adjust is the matrix's own adjustment of every cell's workload
// (--duration, --ttl).
func (cfg MatrixConfig) adjust(w *workload.Config) {
	w.Duration = cmp.Or(cfg.Duration, w.Duration)
	w.TTL = cmp.Or(cfg.TTL, w.TTL)
}

// pickColumns returns the named scenarios as columns, in the order
// named (the default columns if names is empty).
func pickColumns(names []string) ([]scenario.Scenario, error) {
	if len(names) == 0 {
		names = scenario.MatrixColumns
	}
	var out []scenario.Scenario
	for _, n := range names {
		s, err := scenario.Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func runCell(ctx context.Context, cfg MatrixConfig, s scenario.Scenario, cell *report.MatrixCell, dir string) {
	e, _ := cfg.Registry.Lookup(cell.Lock)
	w := workloadOf(s, cell.Topology, scenario.ProfileOf(e, cfg.Cluster), cfg.adjust)
	lock := harness.Config{Lock: cell.Lock, Registry: cfg.Registry, Check: cfg.Check, Cluster: cfg.Cluster}
	for attempt := 0; attempt < cfg.Attempts; attempt++ {
		r, err := harness.Run(ctx, ScenarioRun(s, lock, cell.Topology, w, cfg.Seed+int64(attempt), cell.Lock+"--"+s.Name, filepath.Join(dir, "cells"),
			append(append([]string{}, cfg.Args...), "cell="+cell.Lock+"/"+s.Name)))
		cell.Runs++
		cell.Err = ""
		if err != nil {
			cell.Err = err.Error()
		}
		if r == nil {
			cell.Verdict = checker.Unknown
			return
		}
		cell.Verdict, cell.Ops = r.Verdict, r.Ops
		if r.Verdict == "" {
			cell.Verdict = checker.Unknown
		}
		cell.Dir, _ = filepath.Rel(dir, r.Dir)
		cell.Violations, cell.DoubleHolders = 0, 0
		for _, c := range r.Findings.Checkers {
			cell.Violations += c.ViolationCount
		}
		cell.DoubleHolders = checker.DoubleHolders(r.Findings)
		if cell.Expected != checker.Invalid || cell.Verdict != checker.Valid || ctx.Err() != nil {
			return
		}
	}
}

// write writes matrix.md and matrix.html.
func (m *MatrixResult) write() error {
	cols := make([]report.MatrixColumn, len(m.Scenarios))
	for i, s := range m.Scenarios {
		cols[i] = report.MatrixColumn{Name: s.Name, Description: s.Description}
	}
	return report.WriteMatrix(m.Dir, m.Locks, cols, m.Cells)
}
