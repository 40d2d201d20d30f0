// Package harness runs lockcheck end to end: start Redis, drive the
// workload while recording the history, check it, write the results, stop
// Redis. It is the Go API for users' own tests.
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/version"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// ErrWrite marks an output lockcheck could not write in full (a full
// disk, a read-only dir): the harness failed, and no verdict is given
// over what may be partial.
var ErrWrite = errors.New("write failed")

func writeErr(err error) error { return fmt.Errorf("%w: %w", ErrWrite, err) }

// Run performs one run. It returns an error wrapping ErrConfig for user
// mistakes; any other error means the harness failed. Whatever happens
// (error, panic in a Locker, ctx cancelled), Redis is stopped and what was
// recorded is written, checked and kept.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	p, err := prepare(cfg)
	if err != nil {
		return nil, configErr(err)
	}
	r := &run{plan: p}
	// Deferred first, so it runs last: after Redis is down.
	defer func() { r.dropIfEmpty(err) }()
	// Each phase has a deadline (phase.go): past it, the run ends there,
	// naming it, rather than wait without a bound.
	if err := r.makeDir(); err != nil {
		return r.res, err
	}
	startErr := within(ctx, "start", StartLimit, "Redis's start", r.start)
	if !abandoned(startErr) {
		// Redis goes down whatever happens below, panics included.
		defer func() {
			if derr := within(context.Background(), "stop", StopLimit, "Redis's stop", r.stop); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	if startErr != nil {
		return r.res, startErr
	}
	if err := r.open(); err != nil {
		return r.res, err
	}
	var players workload.Players
	limit, why := r.joinLimit()
	err = within(ctx, phaseOf(r.cfg.Agents), limit, why, func(ctx context.Context) (err error) {
		players, err = r.players(ctx)
		return err
	})
	if abandoned(err) {
		r.closeHistory()
		return r.res, err
	}
	// run.json once the lock is built: it says what the check judges
	// (a lock whose leases are scopes leaves the lease contract out).
	if werr := r.writeInfo(players); werr != nil || err != nil {
		r.closeHistory()
		if players != nil {
			players.Finish()
		}
		return r.res, errors.Join(err, werr)
	}
	runErr := r.drive(ctx, players)
	if errors.Is(runErr, ErrWrite) || abandoned(runErr) {
		// No verdict over a history not written in full, or one whose
		// clients are still at it.
		return r.res, runErr
	}
	// Check even a run that failed: what was recorded is still evidence.
	limit, why = r.checkLimit()
	return r.res, errors.Join(runErr, within(ctx, "check", limit, why, r.judge))
}

// phaseOf names the phase that makes the players ready.
func phaseOf(agents int) string {
	if agents > 0 {
		return "join"
	}
	return "build"
}

// run is one run going through its stages.
type run struct {
	plan
	res    *Result
	cl     *cluster.Cluster
	ownsCl bool // started here, so stopped here
	clock  *history.Clock
	// check is the run's check options, resolved once (resolveCheck).
	check  checker.Options
	info   report.RunInfo
	hf     *os.File
	hw     *history.Writer
	runner *workload.Runner
	// metrics serves --metrics from before the lock is built until the
	// clients stop (nil: none).
	metrics *metrics
	// unrecorded is what the clients counted that the history lacks.
	unrecorded history.Unrecorded
	// abort stops the clients and the nemesis at once with a cause (the
	// history's first write error, kept in lost).
	abort  context.CancelCauseFunc
	lostMu sync.Mutex
	lost   error
}

// start starts Redis (unless the caller runs it).
func (r *run) start(ctx context.Context) (err error) {
	dir := r.res.Dir
	ccfg := &r.cfg.Cluster
	ccfg.LogDir = dir
	ccfg.ClientProxies = ccfg.ClientProxies || r.nemesis.Needs().ClientProxies
	if r.autoPrefix && r.cfg.Running == nil {
		// Unless the user chose one, every key of the run is under
		// lockcheck:<run id>-<random>:.
		ccfg.External.KeyPrefix = RunPrefix("lockcheck:", dir)
	}
	if ccfg.MaxClients == 0 {
		ccfg.MaxClients = r.workload.Clients*2 + 128
	}
	if r.cl = r.cfg.Running; r.cl == nil {
		if r.cl, err = cluster.Up(ctx, *ccfg); err != nil {
			if errors.Is(err, cluster.ErrNotInstalled) || errors.Is(err, cluster.ErrExternal) {
				return configErr(err)
			}
			return fmt.Errorf("start redis: %w", err)
		}
		r.ownsCl = true
	}
	if r.res.Redis == "" && len(r.cl.Nodes) > 0 {
		r.res.Redis = r.cl.Nodes[0].Version
	}
	if r.cl.External() {
		r.workload.KeyPrefix = r.cl.KeyPrefix()
		r.res.Workload = r.workload
	}
	r.check = resolveCheck(r.cfg.Check, r.runFallback())
	return nil
}

// dropIfEmpty removes the run dir of a run refused as misconfigured
// before it recorded any op: it holds nothing to look at, and the
// message says what to fix.
func (r *run) dropIfEmpty(err error) {
	// A run that recorded nothing (history.ErrEmpty) keeps its dir: its
	// run.json and the nodes' logs say what happened.
	if !errors.Is(err, ErrConfig) || errors.Is(err, history.ErrEmpty) || r.res == nil || r.res.Dir == "" || r.hw != nil && r.hw.Counts().Total() > 0 {
		return
	}
	if os.RemoveAll(r.res.Dir) == nil {
		_ = os.Remove(filepath.Dir(r.res.Dir)) // the lock's dir, if this was its only run
		r.res.Dir = ""
	}
}

// stop stops the Redis that start started (an external one: deletes
// the run's keys from it).
func (r *run) stop(context.Context) error {
	if !r.ownsCl {
		return nil
	}
	err := r.cl.Down()
	r.res.Cleaned = r.cl.Cleaned
	return err
}

// open writes run.json and opens the history.
func (r *run) open() error {
	r.clock = history.NewClock()
	cfg, ccfg, w, n := r.cfg, r.cfg.Cluster, r.workload, r.nemesis
	chk := r.check
	r.info = report.RunInfo{Lockcheck: version.Version, Lock: r.lockName, LockVersion: cfg.LockVersion, Redis: r.res.Redis,
		Topology: ccfg.Topology, Backend: ccfg.Backend, RedisConf: ccfg.RedisConf, Args: cfg.Args, Seed: w.Seed, Started: r.clock.Start().UTC(),
		Workload: toJSON(w), ClockTolerance: chk.ClockTolerance.String(), InfoHorizon: chk.InfoHorizon.String(),
		CheckTimeout: chk.Timeout.String(), CheckMemory: chk.Memory}
	r.info.Workload.Shape = cmp.Or(r.info.Workload.Shape, r.shape)
	if ccfg.Topology == cluster.Redlock || ccfg.Topology == cluster.RedisCluster {
		r.info.Masters = ccfg.Nodes
	}
	if len(n.Faults) > 0 {
		r.info.Nemesis = report.RunNemesis{Faults: n.Faults, Interval: n.Interval.String(), Duration: n.Duration.String(),
			RestartDelay: cfg.RestartDelay.String(), Persistence: cmp.Or(ccfg.Persistence, "none"), Targets: n.Targets}
	}
	for _, node := range append(append([]*cluster.Node{}, r.cl.Nodes...), r.cl.Sentinels...) {
		rel, _ := filepath.Rel(r.res.Dir, node.LogPath)
		r.info.Nodes = append(r.info.Nodes, report.RunNode{Name: node.Name, Addr: node.Addr, Log: rel})
	}
	if cl := r.cl; cl.External() {
		r.info.External = &report.RunExternal{KeyPrefix: cl.KeyPrefix(), User: cl.User, TLS: cl.TLS != nil, RoundTrip: cl.RTT.String()}
		for _, f := range cl.Facts {
			r.info.External.Servers = append(r.info.External.Servers, f)
		}
	}
	hf, err := os.Create(filepath.Join(r.res.Dir, "history.jsonl"))
	if err != nil {
		return err
	}
	r.hf, r.hw = hf, history.NewWriter(hf, 0)
	return nil
}

// writeInfo writes run.json, with what the lock that players play
// leaves unjudged (nil players: the lock was never built).
func (r *run) writeInfo(players workload.Players) error {
	if players != nil {
		r.res.OwnTimeout = players.OwnTimeout()
		if why := players.Scope(); why != "" {
			r.check.NotJudged = map[checker.Guarantee]string{checker.LeaseContract: why}
			r.info.NotJudged = map[string]string{string(checker.LeaseContract): why}
		}
	}
	return report.WriteRunInfo(r.res.Dir, r.info)
}

func (r *run) record(op history.Op) {
	if _, err := r.hw.Write(op); err != nil {
		// The history is the evidence: a run that cannot record it
		// stops at once, not at its end.
		r.lostMu.Lock()
		if r.lost == nil {
			r.lost = writeErr(fmt.Errorf("history: %w", err))
			if r.abort != nil {
				r.abort(r.lost)
			}
		}
		r.lostMu.Unlock()
	}
	if r.metrics != nil {
		r.metrics.observe(&op)
	}
}

// lock builds the Locker under test, with the hooks the faults need.
func (r *run) lock() (lockimpl.Locker, error) {
	cl, w := r.cl, r.workload
	env := agent.AccessOf(cl).Env(w, r.clock.Now, r.record)
	// The announced addresses are Aliases' keys, as an agent's are.
	env.TLS, env.DialAddr, env.Announced = cl.TLS, cl.DialAddr, slices.Sorted(maps.Keys(cl.Aliases()))
	// The clients exist before the lock: the faults they play reach it
	// through env.
	r.runner = workload.New(w, r.clock.Now, r.record)
	if r.cfg.Metrics != "" {
		m, err := startMetrics(r.cfg.Metrics, r.runner.Counters())
		if err != nil {
			return nil, configErr(err)
		}
		r.metrics = m
		if r.cfg.Progress != nil {
			fmt.Fprintf(r.cfg.Progress, "metrics: http://%s/metrics\n", m.Addr)
		}
	}
	env.Steady = len(r.nemesis.Faults) == 0 && !cl.External()
	env.Say = sayOnce(r.cfg.Cluster.Say)
	return workload.BuildLock(r.factory, r.lockName, env, r.runner, w, r.nemesis.Needs().CrashesClients, nil)
}

// players makes the run's clients ready: the lock built here, or the
// agents joined and their clocks measured.
func (r *run) players(ctx context.Context) (workload.Players, error) {
	if r.cfg.Agents == 0 {
		locker, err := r.lock()
		if err != nil {
			return nil, err
		}
		return &workload.Local{Runner: r.runner, Locker: locker}, nil
	}
	cfg, needs := r.cfg, r.nemesis.Needs()
	c, err := agent.Listen(agent.CoordinatorConfig{Options: cfg.Options, Dir: r.res.Dir,
		Lock: r.lockName, Workload: r.workload, Cluster: r.cl, ClientProxies: needs.ClientProxies, Crashes: needs.CrashesClients,
		AgentTargets: r.nemesis.AgentTargets, Clock: r.clock, Record: r.record, Log: cfg.Progress})
	if err != nil {
		return nil, err
	}
	if err := c.Wait(ctx); err != nil {
		c.End()
		return nil, err
	}
	return c, nil
}

// drive runs the clients and the nemesis until the run ends, heals every
// fault, and closes the history.
func (r *run) drive(ctx context.Context, p workload.Players) error {
	outer := ctx
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	r.abort = abort
	nctx, stopNemesis := context.WithCancel(ctx)
	nemesisDone := make(chan error, 1)
	go func() {
		nemesisDone <- nemesis.Run(nctx, r.nemesis, nemesis.Env{Cluster: r.cl, Clients: p.Clients(), TTL: r.workload.TTL,
			Window: r.nemesis.Duration, RestartDelay: r.cfg.RestartDelay, Targets: r.nemesis.Targets,
			Agents: p.Agents(), AgentTargets: r.nemesis.AgentTargets}, r.record, r.clock.Now)
	}()
	limit, why := r.playLimit()
	procs := 0
	r.res.Started = time.Duration(r.clock.Now())
	runErr := within(ctx, "play", limit, why, func(ctx context.Context) (err error) {
		procs, err = r.play(ctx, p)
		return err
	})
	if !abandoned(runErr) {
		r.res.Procs = procs
	}
	// Every fault is healed before the history is closed.
	stopNemesis()
	healErr := within(context.Background(), "heal", HealLimit+r.cfg.RestartDelay, fmt.Sprintf("%v + --restart-delay %v", HealLimit, r.cfg.RestartDelay),
		func(context.Context) error { return <-nemesisDone })
	runErr = errors.Join(runErr, healErr)
	r.res.Elapsed = time.Duration(r.clock.Now()) - r.res.Started
	r.res.Interrupted = outer.Err() != nil
	if !abandoned(runErr) {
		runErr = errors.Join(runErr, within(context.Background(), "close", limits.close, "the lock's close and the agents' end",
			func(context.Context) error { p.Finish(); return nil }))
	}
	if !abandoned(runErr) {
		r.res.Agents, r.res.AgentsLost = p.Account()
	}
	// Everything the clients recorded is on disk before anything else.
	cerr := r.closeHistory()
	r.lostMu.Lock()
	lost := r.lost
	r.lostMu.Unlock()
	switch {
	case lost != nil:
		return lost
	case cerr != nil:
		return writeErr(cerr)
	}
	r.unrecorded = p.Unrecorded()
	if r.res.Agents != nil {
		// What was measured of the agents' clocks, beside run.json.
		if err := report.WriteAgents(r.res.Dir, r.res.Agents); err != nil {
			return writeErr(err)
		}
	}
	_ = UpdateLatest(r.cfg.OutDir, r.res.Dir)
	return runErr
}

// play runs the clients (tuning their GOMAXPROCS first, if asked).
// It returns the GOMAXPROCS they ran at.
func (r *run) play(ctx context.Context, p workload.Players) (procs int, err error) {
	tuner := newProcsTuner(r.cfg.TuneProcs, okAcquires(r.hw))
	if tuner != nil {
		go tuner.run()
	}
	err = runWithProgress(ctx, p.Play, r.cfg.Progress, r.clock, r.hw)
	procs = runtime.GOMAXPROCS(0)
	if tuner != nil {
		procs = tuner.end()
	}
	if errors.Is(err, lockimpl.ErrBadLock) {
		return procs, configErr(err)
	}
	return procs, err
}

// closeHistory closes the history file.
func (r *run) closeHistory() error {
	if r.metrics != nil {
		r.metrics.stop() // the clients are done: the live view ends
	}
	var err error
	if werr := r.hw.Close(); werr != nil {
		err = fmt.Errorf("write history: %w", werr)
	}
	if cerr := r.hf.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("write history: %w", cerr))
	}
	return err
}

// judge checks the history and writes results.json and the report.
func (r *run) judge(ctx context.Context) error {
	res := r.res
	n := r.hw.Counts().Total()
	if ctx.Err() != nil && n == 0 {
		// Interrupted after Redis started but before any op: not a
		// history to check, and not a bad configuration.
		return fmt.Errorf("no op recorded before the interrupt: %w", context.Cause(ctx))
	}
	if n > 1_000_000 && r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "checking %d ops, key bucket by key bucket\n", n)
	}
	// A run interrupted before its check is still checked in full: what
	// it recorded is evidence. An interrupt during the check stops it:
	// the keys not yet decided are unknown (interrupted), and the results
	// are written all the same.
	cctx := ctx
	if ctx.Err() != nil {
		cctx = context.WithoutCancel(ctx)
	}
	c, err := checkRun(cctx, res.Dir, r.check)
	if err != nil {
		return err
	}
	c.thresholds = r.cfg.Thresholds
	c.results.Elapsed, c.results.Interrupted = res.Elapsed.Round(time.Millisecond).String(), res.Interrupted
	if res.Elapsed > 0 {
		c.results.OpsPerSec = float64(c.results.Ops) / res.Elapsed.Seconds()
	}
	if err := c.write(r.unrecorded); err != nil {
		return err // no verdict over outputs not written in full
	}
	res.Results, res.Findings, res.Ops = c.results, c.findings, c.results.Summary.Ops.Total()
	return err
}
