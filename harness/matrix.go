package harness

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// MatrixBase is the workload of every cell: leases of 3 s, held 2 s on
// average, so that a lease spans several fault events (a kill every
// 500 ms, a clock jump half-way through a window).
var MatrixBase = workload.Config{Clients: 20, Keys: 5, TTL: 3 * time.Second, Hold: 2 * time.Second,
	HoldDist: workload.HoldExp, Retry: workload.RetryBackoff, OpTimeout: time.Second, Duration: 10 * time.Second}

// Scenarios are the matrix's columns, in order.
func Scenarios() []Scenario {
	ttl := MatrixBase.TTL
	return []Scenario{
		{Name: "none", Description: "no fault"},
		{Name: "pause-client", Description: "a holder stops 1.5 TTL between its acquire and its write (TTL 1s, holds of 500ms)",
			Nemesis:  nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second},
			Workload: func(w *workload.Config) { w.TTL, w.Hold = time.Second, 500*time.Millisecond }},
		{Name: "kill-immediate", Description: "kill-redis every 500 ms, restarted at once without persistence",
			Nemesis: nemesis.Config{Faults: []string{"kill-redis"}, Interval: 500 * time.Millisecond}, Persistence: "none"},
		killDelayedScenario(ttl, 500*time.Millisecond),
		{Name: "kill-aof", Description: "kill-redis every 500 ms, restarted at once with appendfsync always",
			Nemesis: nemesis.Config{Faults: []string{"kill-redis"}, Interval: 500 * time.Millisecond}, Persistence: "aof-always"},
		{Name: "clock-jump", Description: "one node's clock jumps 2 TTL forward for 1 s, every 2 s",
			Nemesis: nemesis.Config{Faults: []string{"clock-jump"}, Interval: 2 * time.Second, Duration: time.Second}},
		clockQuorumScenario,
		failoverScenario,
	}
}

// MatrixLocks are the default rows.
var MatrixLocks = []string{"setnx", "fenced", "redlock", "redsync"}

// MatrixConfig is one matrix run.
type MatrixConfig struct {
	Locks []string
	// Registry has the locks (nil: lockimpl.Builtin()); a user's specs
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

// Cell is one lock under one scenario (report writes the matrix from
// them).
type Cell = report.MatrixCell

// MatrixResult is a matrix run.
type MatrixResult struct {
	Dir       string
	Cells     []Cell
	Scenarios []Scenario
	Locks     []string
}

// Mismatches are the cells that differ from the expectation.
func (m *MatrixResult) Mismatches() []Cell {
	var out []Cell
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
	scen, err := pickScenarios(Scenarios(), cfg.Scenarios)
	if err != nil {
		return nil, configErr(err)
	}
	if cfg.Registry == nil {
		cfg.Registry = lockimpl.Builtin()
	}
	reg := cfg.Registry
	var ttls []time.Duration
	for _, s := range scen {
		ttls = append(ttls, cfg.cellWorkload(s).TTL)
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
	dir, err := newRunDir(cfg.OutDir, "matrix")
	if err != nil {
		return nil, err
	}
	res := &MatrixResult{Dir: dir, Scenarios: scen, Locks: cfg.Locks}
	cfg.runCells(ctx, res)
	if err := res.write(); err != nil {
		return res, err
	}
	_ = updateLatest(cfg.OutDir, dir)
	return res, nil
}

// runCells runs res's cells, lock by lock.
func (cfg MatrixConfig) runCells(ctx context.Context, res *MatrixResult) {
	scen, dir := res.Scenarios, res.Dir
	for _, lock := range cfg.Locks {
		e, _ := cfg.Registry.Lookup(lock)
		for _, s := range scen {
			cell := Cell{Lock: lock, Scenario: s.Name, Expected: cfg.Expect[lock+" "+s.Name]}
			cell.Topology, cell.NA = cellTopology(e, e.PerClient, s, cfg.Cluster)
			if cell.NA == "" && ctx.Err() == nil {
				runCell(ctx, cfg, s, &cell, dir)
			} else if cell.NA == "" {
				cell.NA = "not run (interrupted)"
			}
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "%-10s %-15s %s\n", lock, s.Name, cell.Line())
			}
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
			return configErr(err)
		}
		for _, ttl := range ttls {
			if err := e.FitsTTL(ttl); err != nil {
				return configErr(fmt.Errorf("lock %s: %w", l, err))
			}
		}
	}
	return nil
}

// cellWorkload is the workload of a cell of scenario s.
func (cfg MatrixConfig) cellWorkload(s Scenario) workload.Config {
	w := MatrixBase
	if s.Workload != nil {
		s.Workload(&w)
	}
	w.Duration = cmp.Or(cfg.Duration, w.Duration)
	w.TTL = cmp.Or(cfg.TTL, w.TTL)
	return w
}

func runCell(ctx context.Context, cfg MatrixConfig, s Scenario, cell *Cell, dir string) {
	w := cfg.cellWorkload(s)
	lock := Config{Lock: cell.Lock, Registry: cfg.Registry, Check: cfg.Check, Cluster: cfg.Cluster}
	for attempt := 0; attempt < cfg.Attempts; attempt++ {
		r, err := Run(ctx, s.run(lock, cell.Topology, w, cfg.Seed+int64(attempt), cell.Lock+"--"+s.Name, filepath.Join(dir, "cells"),
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

// ReadExpect reads matrix's expectations file: one "lock scenario
// verdict" per line; # starts a comment.
func ReadExpect(path string) (map[string]checker.Verdict, error) {
	return readExpect(path, "LOCK SCENARIO")
}

// ReadVerifyExpect reads verify's expectations file: one "scenario
// guarantee verdict" per line (guarantee: lease or mutex).
func ReadVerifyExpect(path string) (map[string]checker.Verdict, error) {
	return readExpect(path, "SCENARIO lease|mutex")
}

// readExpect reads lines of two names and a verdict, the names' form
// being what a bad line is told to want.
func readExpect(path, form string) (map[string]checker.Verdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, configErr(err)
	}
	defer f.Close()
	out := map[string]checker.Verdict{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0])
		if text == "" {
			continue
		}
		fs := strings.Fields(text)
		if len(fs) != 3 || (fs[2] != string(checker.Valid) && fs[2] != string(checker.Invalid)) {
			return nil, configErr(fmt.Errorf("%s:%d: want \"%s valid|invalid\", got %q", path, line, form, text))
		}
		out[fs[0]+" "+fs[1]] = checker.Verdict(fs[2])
	}
	return out, sc.Err()
}
