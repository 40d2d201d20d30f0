// Package harness runs lockcheck end to end: start Redis, drive the
// workload while recording the history, check it, write the results, stop
// Redis. It is the Go API for users' own tests.
package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/redis/go-redis/v9"
)

// ErrConfig marks a user mistake (bad option, missing program): exit 2.
var ErrConfig = errors.New("configuration error")

// Version is lockcheck's version, recorded in run.json.
var Version = "0.1.0-dev"

// Config is one run.
type Config struct {
	// Name groups runs under results/<name>/; default the lock's name.
	Name string
	// OutDir is the results root; default "results".
	OutDir string
	// Lock names a lock in Registry; ignored if Factory is set.
	Lock     string
	Registry *lockimpl.Registry
	// Factory builds the Locker under test (a user's own lock); Lock then
	// names it in the results, and LockVersion says which version it is.
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
}

// Result is what a run produced.
type Result struct {
	Dir      string
	Verdict  checker.Verdict
	Report   checker.Report
	Summary  workload.Summary
	Elapsed  time.Duration
	Ops      int64
	Redis    string
	Workload workload.Config
	// Interrupted is set when ctx ended the run early.
	Interrupted bool
	// Faults are the fault windows the nemesis recorded.
	Faults []checker.FaultWindow
}

// RunInfo is run.json: everything needed to reproduce and re-check a run.
type RunInfo struct {
	Lockcheck      string          `json:"lockcheck"`
	Lock           string          `json:"lock"`
	LockVersion    string          `json:"lock_version,omitempty"`
	Redis          string          `json:"redis"`
	Topology       string          `json:"topology"`
	Backend        string          `json:"backend"`
	Args           []string        `json:"args,omitempty"`
	Seed           int64           `json:"seed"`
	Started        time.Time       `json:"started"`
	Workload       workloadJSON    `json:"workload"`
	Nemesis        nemesisJSON     `json:"nemesis"`
	ClockTolerance string          `json:"clock_tolerance"`
	InfoHorizon    string          `json:"info_horizon"`
	Nodes          []nodeJSON      `json:"nodes"`
	Extra          json.RawMessage `json:"extra,omitempty"`
}

type workloadJSON struct {
	Clients   int    `json:"clients"`
	Keys      int    `json:"keys"`
	KeyDist   string `json:"key_dist"`
	Ops       int64  `json:"ops"`
	Duration  string `json:"duration"`
	TTL       string `json:"ttl"`
	Hold      string `json:"hold"`
	HoldDist  string `json:"hold_dist"`
	Retry     string `json:"retry"`
	Think     string `json:"think"`
	OpTimeout string `json:"op_timeout"`
	Margin    string `json:"margin"`
	// ExtendEvery is the client-side watchdog's interval, if any.
	ExtendEvery string `json:"extend_every,omitempty"`
}

type nemesisJSON struct {
	Faults       []string `json:"faults,omitempty"`
	Interval     string   `json:"interval,omitempty"`
	Duration     string   `json:"duration,omitempty"`
	RestartDelay string   `json:"restart_delay,omitempty"`
	Persistence  string   `json:"persistence,omitempty"`
}

type nodeJSON struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	Log  string `json:"log"`
}

// ResultsFile is results.json.
type ResultsFile struct {
	Verdict     checker.Verdict       `json:"verdict"`
	Lock        string                `json:"lock"`
	Ops         int64                 `json:"ops"`
	Elapsed     string                `json:"elapsed"`
	OpsPerSec   float64               `json:"ops_per_sec"`
	Interrupted bool                  `json:"interrupted,omitempty"`
	Summary     workload.Summary      `json:"summary"`
	Faults      []checker.FaultWindow `json:"faults,omitempty"`
	Checkers    []checker.Result      `json:"checkers"`
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
	var topology string
	if p.factory, p.lockName, topology, err = cfg.factory(); err != nil {
		return p, err
	}
	if topology != "" {
		if cfg.Cluster.Topology != "" && cfg.Cluster.Topology != topology {
			return p, fmt.Errorf("lock %s needs --topology %s, not %s", p.lockName, topology, cfg.Cluster.Topology)
		}
		p.cfg.Cluster.Topology = topology
	}
	if p.cfg.Cluster, err = p.cfg.Cluster.WithDefaults(); err != nil {
		return p, err
	}
	if p.nemesis, err = cfg.Nemesis.WithDefaults(); err != nil {
		return p, err
	}
	if err := p.nemesis.Fits(p.cfg.Cluster.Topology); err != nil {
		return p, err
	}
	if p.nemesis.Seed == 0 {
		p.nemesis.Seed = p.workload.Seed
	}
	if cfg.RestartDelay < 0 {
		return p, errors.New("--restart-delay must not be negative")
	}
	if err := cfg.Check.Validate(); err != nil {
		return p, err
	}
	if cfg.Check.InfoHorizon == 0 {
		p.cfg.Check.InfoHorizon = infoHorizon(p.workload, p.nemesis, cfg.RestartDelay)
	}
	if p.cfg.Cluster.Backend == cluster.Local && cfg.Running == nil {
		if p.redisVersion, err = cluster.ServerVersion(cfg.Cluster.RedisServer); err != nil {
			return p, err
		}
	}
	return p, nil
}

func configErr(err error) error { return fmt.Errorf("%w: %w", ErrConfig, err) }

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
	if err := r.start(ctx); err != nil {
		return r.res, err
	}
	// Redis goes down whatever happens below, panics included.
	defer func() {
		if derr := r.stop(); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := r.open(); err != nil {
		return r.res, err
	}
	locker, err := r.lock()
	if err != nil {
		r.closeHistory()
		return r.res, err
	}
	runErr := r.drive(ctx, locker)
	// Check even a run that failed: what was recorded is still evidence.
	return r.res, errors.Join(runErr, r.judge(ctx))
}

// run is one run going through its stages.
type run struct {
	plan
	res    *Result
	cl     *cluster.Cluster
	ownsCl bool // started here, so stopped here
	clock  *history.Clock
	info   RunInfo
	hf     *os.File
	hw     *history.Writer
	runner *workload.Runner
}

// start makes the run dir and starts Redis (unless the caller runs it).
func (r *run) start(ctx context.Context) error {
	dir, err := newRunDir(r.cfg.OutDir, cmp.Or(r.cfg.Name, r.lockName))
	if err != nil {
		return err
	}
	r.res = &Result{Dir: dir, Redis: r.redisVersion, Workload: r.workload}
	ccfg := &r.cfg.Cluster
	ccfg.LogDir = dir
	_, clientProxies, clockShim := r.nemesis.Needs()
	ccfg.ClientProxies = ccfg.ClientProxies || clientProxies
	ccfg.ClockShim = ccfg.ClockShim || clockShim
	if ccfg.MaxClients == 0 {
		ccfg.MaxClients = r.workload.Clients*2 + 128
	}
	if r.cl = r.cfg.Running; r.cl == nil {
		if r.cl, err = cluster.Up(ctx, *ccfg); err != nil {
			if errors.Is(err, cluster.ErrNotInstalled) {
				return configErr(err)
			}
			return fmt.Errorf("start redis: %w", err)
		}
		r.ownsCl = true
	}
	if r.res.Redis == "" && len(r.cl.Nodes) > 0 {
		r.res.Redis = r.cl.Nodes[0].Version
	}
	return nil
}

// stop stops the Redis that start started.
func (r *run) stop() error {
	if !r.ownsCl {
		return nil
	}
	return r.cl.Down()
}

// open writes run.json and opens the history.
func (r *run) open() error {
	r.clock = history.NewClock()
	cfg, ccfg, w, n := r.cfg, r.cfg.Cluster, r.workload, r.nemesis
	r.info = RunInfo{Lockcheck: Version, Lock: r.lockName, LockVersion: cfg.LockVersion, Redis: r.res.Redis,
		Topology: ccfg.Topology, Backend: ccfg.Backend, Args: cfg.Args, Seed: w.Seed, Started: r.clock.Start().UTC(),
		Workload: toJSON(w), ClockTolerance: cfg.Check.Resolved().ClockTolerance.String(),
		InfoHorizon: cfg.Check.Resolved().InfoHorizon.String()}
	if len(n.Faults) > 0 {
		r.info.Nemesis = nemesisJSON{Faults: n.Faults, Interval: n.Interval.String(), Duration: n.Duration.String(),
			RestartDelay: cfg.RestartDelay.String(), Persistence: cmp.Or(ccfg.Persistence, "none")}
	}
	for _, node := range append(append([]*cluster.Node{}, r.cl.Nodes...), r.cl.Sentinels...) {
		rel, _ := filepath.Rel(r.res.Dir, node.LogPath)
		r.info.Nodes = append(r.info.Nodes, nodeJSON{Name: node.Name, Addr: node.Addr, Log: rel})
	}
	if err := writeJSON(filepath.Join(r.res.Dir, "run.json"), r.info); err != nil {
		return err
	}
	hf, err := os.Create(filepath.Join(r.res.Dir, "history.jsonl"))
	if err != nil {
		return err
	}
	r.hf, r.hw = hf, history.NewWriter(hf, 0)
	return nil
}

func (r *run) record(op history.Op) { _, _ = r.hw.Write(op) }

// lock builds the Locker under test, with the hooks the faults need.
func (r *run) lock() (lockimpl.Locker, error) {
	cl, w := r.cl, r.workload
	env := lockimpl.Env{Addrs: cl.Addrs(), Password: cl.Password, PoolSize: w.Clients + 16, OpTimeout: w.OpTimeout,
		Now: r.clock.Now, Record: r.record, DialAddr: cl.DialAddr}
	if crashHook, _, _ := r.nemesis.Needs(); crashHook {
		// The runner is made after the locker; commands a lock sends while
		// it is built (SCRIPT LOAD) come before it: no client has crashed.
		env.Hooks = []redis.Hook{lockimpl.CrashHook(func(id int) bool { return r.runner != nil && r.runner.Crashed(id) },
			func(id int) {
				if r.runner != nil {
					r.runner.Succeeded(id)
				}
			})}
	}
	if len(cl.Sentinels) > 0 {
		env.Sentinels, env.MasterName = cl.SentinelAddrs(), cluster.MasterName
	}
	locker, err := r.factory(env)
	if err != nil {
		err = fmt.Errorf("lock %s: %w", r.lockName, err)
		if errors.Is(err, lockimpl.ErrBadLock) {
			err = configErr(err)
		}
		return nil, err
	}
	if w.ExtendEvery > 0 {
		locker = lockimpl.NewWatchdog(locker, w.ExtendEvery, env)
	}
	return locker, nil
}

// drive runs the clients and the nemesis until the run ends, heals every
// fault, and closes the history.
func (r *run) drive(ctx context.Context, locker lockimpl.Locker) error {
	r.runner = workload.New(r.workload, locker, r.clock.Now, r.record)
	nctx, stopNemesis := context.WithCancel(ctx)
	nemesisDone := make(chan error, 1)
	go func() {
		nemesisDone <- nemesis.Run(nctx, r.nemesis, nemesis.Env{Cluster: r.cl, Clients: r.runner, TTL: r.workload.TTL,
			Window: r.nemesis.Duration, RestartDelay: r.cfg.RestartDelay}, r.record, r.clock.Now)
	}()
	runErr := runWithProgress(ctx, r.runner, r.cfg.Progress, r.clock)
	if errors.Is(runErr, lockimpl.ErrBadLock) {
		runErr = configErr(runErr)
	}
	// Every fault is healed before the history is closed.
	stopNemesis()
	if nerr := <-nemesisDone; nerr != nil {
		runErr = errors.Join(runErr, nerr)
	}
	r.res.Elapsed = time.Duration(r.clock.Now())
	r.res.Interrupted = ctx.Err() != nil
	closeLocker(locker)
	// Everything the clients recorded is on disk before anything else.
	runErr = errors.Join(runErr, r.closeHistory())
	r.res.Summary = r.runner.Counters().Snapshot()
	r.res.Ops = r.res.Summary.Total()
	_ = updateLatest(r.cfg.OutDir, r.res.Dir)
	return runErr
}

func (r *run) closeHistory() error {
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
	res, dir := r.res, r.res.Dir
	rep, rf, ops, _, err := checkDir(context.WithoutCancel(ctx), dir, r.cfg.Check)
	if err != nil {
		return err
	}
	res.Report, res.Verdict, res.Faults = rep, rep.Verdict, rf.Faults
	rf.Summary, rf.Elapsed, rf.Interrupted = res.Summary, res.Elapsed.Round(time.Millisecond).String(), res.Interrupted
	if res.Elapsed > 0 {
		rf.OpsPerSec = float64(rf.Ops) / res.Elapsed.Seconds()
	}
	err = writeJSON(filepath.Join(dir, "results.json"), rf)
	if rerr := writeReport(dir, ops, rep, r.info, res.Summary.CutShort); rerr != nil {
		err = errors.Join(err, fmt.Errorf("report: %w", rerr))
	}
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

// factory returns the lock's factory, its name, and the topology it needs
// ("": any single-master one).
func (cfg *Config) factory() (lockimpl.Factory, string, string, error) {
	if cfg.Factory != nil {
		return cfg.Factory, cmp.Or(cfg.Lock, "custom"), "", nil
	}
	reg := cfg.Registry
	if reg == nil {
		reg = lockimpl.Builtin()
	}
	name := cmp.Or(cfg.Lock, "setnx")
	e, err := reg.Lookup(name)
	if err != nil {
		return nil, "", "", err
	}
	return e.Factory, name, e.Topology, nil
}

// runWithProgress runs the workload, printing a progress line each second.
// A panic that escapes the workload (it recovers its clients') still
// leaves through the deferred cleanup in Run.
func runWithProgress(ctx context.Context, r *workload.Runner, w io.Writer, clock *history.Clock) (err error) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if w != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			var prev int64
			for {
				select {
				case <-stop:
					fmt.Fprint(w, "\r\033[K")
					return
				case <-t.C:
					s := r.Counters().Snapshot()
					total := s.Total()
					ok, fail, info := byType(s)
					fmt.Fprintf(w, "\r\033[K%6.1fs  %8d ops/s  ok %d  fail %d  info %d",
						float64(clock.Now())/1e9, total-prev, ok, fail, info)
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
	return r.Run(ctx)
}

func byType(s workload.Summary) (ok, fail, info int64) {
	for _, m := range s.Ops {
		ok += m[history.OK]
		fail += m[history.Fail]
		info += m[history.Info]
	}
	return
}

func closeLocker(l lockimpl.Locker) {
	if c, ok := l.(lockimpl.Closer); ok {
		_ = c.Close()
	}
}

func toJSON(c workload.Config) workloadJSON {
	w := workloadJSON{Clients: c.Clients, Keys: c.Keys, KeyDist: c.KeyDist, Ops: c.Ops,
		Duration: c.Duration.String(), TTL: c.TTL.String(), Hold: c.Hold.String(), HoldDist: c.HoldDist,
		Retry: c.Retry, Think: c.Think.String(), OpTimeout: c.OpTimeout.String(), Margin: c.Margin.String()}
	if c.ExtendEvery > 0 {
		w.ExtendEvery = c.ExtendEvery.String()
	}
	return w
}

func newRunDir(root, name string) (string, error) {
	if root == "" {
		root = "results"
	}
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, name)
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
			return "", fmt.Errorf("results dir: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// updateLatest points <root>/latest at dir.
func updateLatest(root, dir string) error {
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

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
