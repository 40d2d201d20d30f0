// Package harness runs lockcheck end to end: start Redis, drive the
// workload while recording the history, check it, write the results, stop
// Redis. It is the Go API for users' own tests.
package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

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

// ErrConfig marks a user mistake (bad option, missing program): exit 2.
var ErrConfig = workload.ErrConfig

// Config is one run.
type Config struct {
	// Name groups runs under results/<name>/; default the lock's name.
	Name string
	// OutDir is the results root; default "results".
	OutDir string
	// Lock names a lock in Registry (default lockimpl.All()); a lock
	// of the user's can be registered there (process.Entry for a
	// lock process). Lock is ignored for the lookup if Factory is set.
	Lock     string
	Registry *lockimpl.Registry
	// Factory builds the Locker under test (a user's own lock, whose
	// go-redis clients must take Env's Hooks and DialAddr for client
	// faults to reach it); Lock then names it in the results, and
	// LockVersion says which version it is.
	Factory     lockimpl.Factory
	LockVersion string
	Workload    workload.Config
	Cluster     cluster.Config
	// Running, if set, is a cluster the caller started and will stop: the
	// run uses it instead of starting one (lockcheck bench measures its
	// baseline on the same node).
	Running *cluster.Cluster
	// Nemesis is the fault schedule (no faults if empty).
	Nemesis nemesis.Config
	// RestartDelay is how long kill-redis keeps a node down.
	RestartDelay time.Duration
	// Check tunes the checkers. InfoHorizon 0 means the op timeout plus
	// one second: an op can take effect no later than that after it gave up.
	Check checker.Options
	// Progress receives a live progress line each second (nil: none).
	Progress io.Writer
	// Args is the command line, recorded in run.json to reproduce the run.
	Args []string
	// Metrics, if set, is HOST:PORT (HOST "" is 127.0.0.1) of a
	// Prometheus endpoint, /metrics, served while the clients run.
	Metrics string
	// Thresholds are performance gates over the run's figures
	// (report.ParseThreshold); results.json and junit.xml say how each
	// fared, and Result.ThresholdsFailed whether one failed.
	Thresholds []report.Threshold
	// TuneProcs, if positive, is spent at the start of the run choosing
	// the clients' GOMAXPROCS, one P or all, by their acquisitions/s
	// (procsTuner; lockcheck bench tunes in its warm-up). The check that
	// follows the clients has every P again. Result.Procs says the choice.
	TuneProcs time.Duration

	// Options, with Agents set, play the clients on agents and make this
	// run their coordinator, which merges their ops into one history on
	// its clock.
	agent.Options
}

// Result is what a run produced.
type Result struct {
	Dir      string
	Verdict  checker.Verdict
	Findings checker.Findings
	Summary  report.Summary
	Elapsed  time.Duration
	Ops      int64
	Redis    string
	Workload workload.Config
	// Interrupted is set when ctx ended the run early.
	Interrupted bool
	// Faults are the fault windows the nemesis recorded.
	Faults []checker.FaultWindow
	// Cleaned is what the run deleted from an external Redis at its end.
	Cleaned cluster.Cleaned
	// Latency and Throughput are results.json's; Thresholds how each
	// --threshold fared.
	Latency    map[string]report.Percentiles
	Throughput report.Throughput
	Thresholds []report.ThresholdResult
	// TTLAdvice is results.json's ttl_advice.
	TTLAdvice report.TTLAdvice
	// Procs is the GOMAXPROCS the clients ran at (after TuneProcs).
	Procs int
	// OwnTimeout is the lock's own command timeout, if it declared one
	// (lockimpl.OwnTimeouter).
	OwnTimeout time.Duration
	// Agents is run.json's account of the agents (Config.Agents), and
	// AgentsLost says which were lost, and when.
	Agents     []report.RunAgent
	AgentsLost []string
}

// ThresholdsFailed returns the thresholds the run did not meet.
func (r *Result) ThresholdsFailed() []report.ThresholdResult {
	return report.Failed(r.Thresholds)
}

// plan is a run's configuration, checked and with its defaults filled in.
type plan struct {
	cfg      Config
	workload workload.Config
	nemesis  nemesis.Config
	factory  lockimpl.Factory
	lockName string
	// redisVersion is the local redis-server's; the docker backend needs
	// none here (its version comes from the nodes once they run).
	redisVersion string
	// autoPrefix: an external Redis with no --key-prefix, so the run's
	// keys go under lockcheck:<run id>:.
	autoPrefix bool
}

// Validate says what is wrong with cfg, if anything, without starting
// anything: what Run would refuse with ErrConfig before it starts Redis.
func Validate(cfg Config) error {
	if _, err := prepare(cfg); err != nil {
		return configErr(err)
	}
	return nil
}

// prepare checks every part of cfg before anything starts, and fills in
// the defaults: one place that every caller of Run passes through.
func prepare(cfg Config) (plan, error) {
	p := plan{cfg: cfg}
	var err error
	if p.workload, err = cfg.Workload.WithDefaults(); err != nil {
		return p, err
	}
	e, err := cfg.Entry()
	if err != nil {
		return p, err
	}
	p.factory, p.lockName = e.Factory, SafeName(e.Name)
	if err := e.FitsTTL(p.workload.TTL); err != nil {
		return p, err
	}
	p.cfg.LockVersion = cmp.Or(p.cfg.LockVersion, e.Version)
	if e.Waits && e.Topology == "" {
		switch cfg.Cluster.Topology {
		case "":
			p.cfg.Cluster.Topology = cluster.Sentinel
		case cluster.Single, cluster.Redlock:
			return p, fmt.Errorf("lock %s waits for a replica (WAIT): it needs --topology sentinel or cluster, not %s", p.lockName, cfg.Cluster.Topology)
		}
	}
	if topology := e.Topology; topology != "" {
		if cfg.Cluster.Topology != "" && cfg.Cluster.Topology != topology {
			return p, fmt.Errorf("lock %s needs --topology %s, not %s", p.lockName, topology, cfg.Cluster.Topology)
		}
		p.cfg.Cluster.Topology = topology
	}
	if err := p.faultsAndServers(e); err != nil {
		return p, err
	}
	if cfg.Metrics != "" {
		if p.cfg.Metrics, err = metricsAddr(cfg.Metrics); err != nil {
			return p, err
		}
	}
	if err := p.fitsAgents(e); err != nil {
		return p, err
	}
	if cfg.RestartDelay < 0 {
		return p, errors.New("--restart-delay must not be negative")
	}
	if err := cfg.Check.Validate(); err != nil {
		return p, err
	}
	if err := fitsMachine(p.workload.Clients/max(1, cfg.Agents), max(1, p.cfg.Cluster.Nodes)); err != nil {
		return p, err
	}
	if p.cfg.Cluster.Backend == cluster.Local && cfg.Running == nil {
		if p.redisVersion, err = cluster.ServerVersion(cfg.Cluster.RedisServer); err != nil {
			return p, err
		}
	}
	return p, nil
}

// faultsAndServers checks the faults against the lock and the servers,
// and fills in both: the nemesis's defaults, the cluster's.
func (p *plan) faultsAndServers(e lockimpl.Entry) error {
	var err error
	if p.nemesis, err = p.cfg.Nemesis.WithDefaults(); err != nil {
		return err
	}
	p.cfg.Cluster.ClockShim = p.cfg.Cluster.ClockShim || p.nemesis.Needs().Clock
	p.cfg.Cluster.External.Wait = e.Waits
	if err := p.nemesis.FitsBackend(cmp.Or(p.cfg.Cluster.Backend, cluster.Local)); err != nil {
		return err
	}
	if p.autoPrefix = p.cfg.Cluster.Backend == cluster.External && p.cfg.Cluster.External.KeyPrefix == ""; p.autoPrefix {
		// start names the prefix after the run dir; a stand-in is
		// checked here.
		p.cfg.Cluster.External.KeyPrefix = "lockcheck:"
	}
	if p.cfg.Cluster, err = p.cfg.Cluster.WithDefaults(); err != nil {
		return err
	}
	if err := p.nemesis.Fits(p.cfg.Cluster.Topology); err != nil {
		return err
	}
	if e.OwnClient {
		if err := p.nemesis.FitsOwnClient(e.Name, e.PerClient); err != nil {
			return err
		}
	}
	if p.nemesis.Seed == 0 {
		p.nemesis.Seed = p.workload.Seed
	}
	return nil
}

func configErr(err error) error { return workload.ConfigErr(err) }

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

// makeDir makes the run dir.
func (r *run) makeDir() error {
	dir, err := NewRunDir(r.cfg.OutDir, cmp.Or(r.cfg.Name, r.lockName))
	if err != nil {
		return err
	}
	r.res = &Result{Dir: dir, Redis: r.redisVersion, Workload: r.workload}
	return nil
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
	r.res.Elapsed = time.Duration(r.clock.Now())
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
	res.Findings, res.Verdict, res.Faults = c.findings, c.findings.Verdict, c.results.Faults
	res.Summary, res.Ops = c.results.Summary, c.results.Summary.Ops.Total()
	res.Thresholds, res.Latency, res.Throughput = c.results.Thresholds, c.results.Latency, c.results.Throughput
	res.TTLAdvice = c.results.TTLAdvice
	return err
}

// infoHorizon is how long after it returned an indeterminate op may still
// take effect: the op timeout (a request can sit in a socket that long),
// plus the longest time a fault can hold Redis still, plus a second.
func infoHorizon(w workload.Config, n nemesis.Config, restartDelay time.Duration) time.Duration {
	h := w.OpTimeout + time.Second
	for _, f := range n.Faults {
		if k, _ := nemesis.Lookup(f); k.Redis {
			h = w.OpTimeout + time.Second + max(n.Duration, restartDelay)
			break
		}
	}
	return h
}

// Entry returns the lock under test: Factory, or the lock Lock names.
func (cfg *Config) Entry() (lockimpl.Entry, error) {
	if cfg.Factory != nil {
		return lockimpl.Entry{Name: cmp.Or(cfg.Lock, "custom"), Factory: cfg.Factory, Version: cfg.LockVersion}, nil
	}
	reg := cfg.Registry
	if reg == nil {
		reg = lockimpl.All()
	}
	return reg.Lookup(cmp.Or(cfg.Lock, "setnx"))
}

// runWithProgress runs the workload, printing a progress line each second.
// A panic that escapes the workload (it recovers its clients') still
// leaves through the deferred cleanup in Run.
func runWithProgress(ctx context.Context, play func(context.Context) error, w io.Writer, clock *history.Clock, hw *history.Writer) (err error) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if w != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			line := report.NewProgress(w)
			var prev int64
			for {
				select {
				case <-stop:
					line.End()
					return
				case <-t.C:
					c := hw.Counts()
					total := c.Total()
					ok, fail, info := byType(c)
					line.Update(float64(clock.Now())/1e9, total-prev, ok, fail, info)
					prev = total
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		if p := recover(); p != nil {
			err = fmt.Errorf("workload panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return play(ctx)
}

func byType(c history.Counts) (ok, fail, info int64) {
	for _, m := range c {
		ok += m[history.OK]
		fail += m[history.Fail]
		info += m[history.Info]
	}
	return
}

func toJSON(c workload.Config) report.RunWorkload {
	w := report.RunWorkload{Clients: c.Clients, Keys: c.Keys, KeyDist: c.KeyDist, Ops: c.Ops,
		Duration: c.Duration.String(), TTL: c.TTL.String(), Hold: c.Hold.String(), HoldDist: c.HoldDist,
		Retry: c.Retry, Think: c.Think.String(), OpTimeout: c.OpTimeout.String(), Margin: c.Margin.String(),
		SkipRelease: c.SkipRelease, TTLFactor: c.TTLFactor, Rate: c.Rate}
	if c.Policy.Kind != "" {
		w.Retry = c.Policy.String()
	}
	if c.ExtendEvery > 0 {
		w.ExtendEvery = c.ExtendEvery.String()
	}
	return w
}

// NewRunDir makes a new run dir under root/name, named for the time.
func NewRunDir(root, name string) (string, error) {
	if root == "" {
		root = "results"
	}
	name = SafeName(name)
	base := filepath.Join(root, name, time.Now().Format("20060102T150405"))
	dir := base
	for i := 1; ; i++ {
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = os.Mkdir(dir, 0o755)
		}
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", configErr(fmt.Errorf("--out %s: %w: choose a directory lockcheck may write", root, err))
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// UpdateLatest points <root>/latest at dir.
func UpdateLatest(root, dir string) error {
	if root == "" {
		root = "results"
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return err
	}
	link := filepath.Join(root, "latest")
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// RunPrefix is the key prefix of a run on an external Redis, in dir:
// the run's id and a random part, since two runs started in the same
// second (two CI jobs sharing a staging Redis) get the same id.
func RunPrefix(base, dir string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base + filepath.Base(dir) + "-" + hex.EncodeToString(b[:]) + ":"
}

// SafeName is name fit for a path and a terminal: path separators and
// control characters (a newline that would forge a "verdict:" line, an
// escape sequence) become '_'.
func SafeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '_'
		}
		return r
	}, name)
}

// PeakRSS returns this process's peak resident set size, in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// Text is what the run's summary prints (report.TextRun).
func (r *Result) Text() report.RunText {
	return report.RunText{Dir: r.Dir, Ops: r.Ops, Elapsed: r.Elapsed, Interrupted: r.Interrupted, AgentsLost: r.AgentsLost,
		KeyPrefix: r.Cleaned.Prefix, Deleted: r.Cleaned.Deleted, Left: r.Cleaned.Left, Summary: r.Summary, Latency: r.Latency,
		TTLAdvice: r.TTLAdvice, PeakRSS: PeakRSS(), Faults: r.Faults, Findings: r.Findings, Thresholds: r.Thresholds, Verdict: r.Verdict}
}

// sayOnce passes say its first line only (a process per client, each slow
// to start, says the same thing).
func sayOnce(say func(string)) func(string) {
	if say == nil {
		return nil
	}
	var once sync.Once
	return func(s string) { once.Do(func() { say(s) }) }
}
