package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/shrink"
)

// shrinkOpts is what the shrink flags fill.
type shrinkOpts struct {
	from          string
	out           string
	budget        time.Duration
	runs, measure int
	quiet         bool
}

func shrinkFlags(o *shrinkOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.StringVar(&o.from, "from", "", "the broken run: its dir (a lockcheck run's, a plan's, a verify scenario's or a matrix cell's), its run.json, or a plan file; or a verify or matrix dir, whose first broken run it takes")
	fs.StringVar(&o.out, "out", "", "where the plan, the state and the runs go (default: FROM's dir/shrink); run again with the same --out, a shrink resumes")
	fs.DurationVar(&o.budget, "budget", shrink.DefaultBudget, "time for the whole shrink, its phases each a share")
	fs.IntVar(&o.runs, "runs", shrink.DefaultRuns, "runs a candidate plan gets to break with the same finding")
	fs.IntVar(&o.measure, "measure", 10, "runs the smallest plan's reproduction rate is measured over")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no line per step")
	return fs
}

func shrinkCmd(ctx context.Context, args []string) (int, error) {
	var o shrinkOpts
	fs := shrinkFlags(&o)
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	if o.from == "" {
		return exitUsage, usageError{errors.New("shrink needs --from: a broken run's dir, its run.json or a plan file")}
	}
	from, breaks, dir, err := shrinkSource(o.from)
	if err != nil {
		return exitUsage, usageError{err}
	}
	if len(breaks) == 0 {
		return exitUsage, usageError{fmt.Errorf("--from %s: the run did not break (no checker found it invalid): nothing to shrink", o.from)}
	}
	if _, _, err := planConfig(from, nil); err != nil {
		return exitUsage, fmt.Errorf("--from %s: its command does not run: %w", o.from, err)
	}
	if o.out == "" {
		o.out = filepath.Join(dir, "shrink")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return exitFailed, err
	}
	sweepLeftovers()
	target := breaks[0]
	log := io.Writer(os.Stderr)
	if o.quiet {
		log = io.Discard
	}
	fmt.Fprintf(log, "shrink: %s from %s, keeping %s\n", from.Size(), o.from, target.Finding)
	first, _ := shrink.Earliest(breaks, target.Finding)
	res, err := shrink.Shrink(ctx, shrink.Config{From: from, Target: target.Finding, BreakAt: first.End,
		Trial: trial(filepath.Join(o.out, "runs"), log), Runs: o.runs, Measure: o.measure, Budget: o.budget,
		State: filepath.Join(o.out, "shrink-state.json"), Log: log})
	if errors.Is(err, shrink.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "shrink: interrupted at %s after %d runs; the same command resumes from %s\n",
			res.After.Size(), res.Runs, filepath.Join(o.out, "shrink-state.json"))
		return exitInterrupted, nil
	}
	if err != nil {
		return exitFailed, err
	}
	return writeShrunk(o.out, res)
}

// writeShrunk writes the smallest plan as plan.json and prints the
// command that runs it and the summary line.
func writeShrunk(out string, res shrink.Result) (int, error) {
	path := filepath.Join(out, "plan.json")
	p := res.After.Clone()
	p.Command = "lockcheck run --plan " + path
	p.Shrunk = &shrink.Shrunk{Finding: res.Target, Reproduced: res.Reproduced, Measured: res.Measured, From: res.Before.Size().String()}
	b, err := json.MarshalIndent(p, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return exitFailed, fmt.Errorf("plan: %w", err)
	}
	fmt.Println(res.Summary())
	if len(res.Late) > 0 {
		fmt.Printf("phases past their deadlines: %s\n", strings.Join(res.Late, ", "))
	}
	fmt.Printf("plan: %s\nreplay: lockcheck run --plan %s --runs %d\n", path, path, max(res.Measured, 1))
	if res.Dir != "" {
		fmt.Printf("a run of it that broke: %s\n", filepath.Join(res.Dir, "latest"))
	}
	return exitValid, nil
}

// shrinkSource reads --from: the plan of the run, what broke it, and
// its dir.
func shrinkSource(from string) (shrink.Plan, []shrink.Break, string, error) {
	st, err := os.Stat(from)
	if err != nil {
		return shrink.Plan{}, nil, "", fmt.Errorf("--from %s: %v", from, err)
	}
	dir := from
	if !st.IsDir() {
		if filepath.Base(from) != "run.json" {
			p, err := shrink.Load(from)
			return p, nil, filepath.Dir(from), errors.Join(err, errors.New("a plan file has no break of its own: give the dir of a run of it that broke"))
		}
		dir = filepath.Dir(from)
	}
	if st.IsDir() && !exists(filepath.Join(dir, "run.json")) && (exists(filepath.Join(dir, "runs")) || exists(filepath.Join(dir, "cells"))) {
		picked, err := pickBroken(dir)
		if err != nil {
			return shrink.Plan{}, nil, dir, fmt.Errorf("--from %s: %w", from, err)
		}
		dir = picked
	}
	info, _, err := report.ReadRunInfo(dir)
	if err != nil {
		return shrink.Plan{}, nil, dir, err
	}
	args := info.Args
	if len(args) >= 2 && args[0] == "lockcheck" && (args[1] == "verify" || args[1] == "matrix") {
		if args, err = scenarioRunArgs(info); err != nil {
			return shrink.Plan{}, nil, dir, fmt.Errorf("--from %s: %w", from, err)
		}
	}
	p, err := runPlan(args)
	if err != nil {
		return p, nil, dir, fmt.Errorf("--from %s: %w", from, err)
	}
	breaks, err := breaksOf(dir)
	if err != nil {
		return p, nil, dir, fmt.Errorf("--from %s: its results: %v (re-check it with lockcheck check)", from, err)
	}
	return p, breaks, dir, nil
}

// breaksOf is what broke the run in dir, by its results.json.
func breaksOf(dir string) ([]shrink.Break, error) {
	var res report.Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		return nil, err
	}
	return shrink.FindingsOf(checker.Findings{Checkers: res.Checkers}), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pickBroken is the run of a verify dir (its runs/SCENARIO/TIMESTAMP,
// in battery order) or a matrix dir (its cells/LOCK--SCENARIO/TIMESTAMP,
// by name) that shrink takes: the first whose results broke. Where more
// than one broke it says which it took and how to take another.
func pickBroken(dir string) (string, error) {
	broke, kind, err := brokenRuns(dir)
	if err != nil {
		return "", err
	}
	if len(broke) > 1 {
		var others []string
		for _, d := range broke[1:] {
			others = append(others, "--from "+d)
		}
		fmt.Fprintf(os.Stderr, "shrink: %d of the %s's runs broke; taking the first, %s (another: %s)\n", len(broke), kind, broke[0], strings.Join(others, " or "))
	} else {
		fmt.Fprintf(os.Stderr, "shrink: taking the %s's run that broke, %s\n", kind, broke[0])
	}
	return broke[0], nil
}

// brokenRuns are the first broken run of each scenario (or cell) of a
// verify or matrix dir, in battery order, at least one; kind says which
// dir it is.
func brokenRuns(dir string) (broke []string, kind string, _ error) {
	kind, sub := "verify", "runs"
	if !exists(filepath.Join(dir, "runs")) {
		kind, sub = "matrix", "cells"
	}
	runs := 0
	for _, name := range runOrder(dir, kind, sub) {
		dirs, _ := filepath.Glob(filepath.Join(dir, sub, name, "2*"))
		slices.Sort(dirs)
		for _, d := range dirs {
			if !exists(filepath.Join(d, "run.json")) {
				continue
			}
			runs++
			if b, err := breaksOf(d); err == nil && len(b) > 0 {
				broke = append(broke, d)
				break // a scenario's first broken run
			}
		}
	}
	switch {
	case runs == 0:
		return nil, kind, fmt.Errorf("a %s dir with no run under %s", kind, sub)
	case len(broke) == 0:
		return nil, kind, fmt.Errorf("none of the %s's %d runs broke (no checker found one invalid): nothing to shrink", kind, runs)
	}
	return broke, kind, nil
}

// runOrder is the order of a verify dir's scenarios (its verify.json's
// rows, then the battery's) or a matrix dir's cells (by name).
func runOrder(dir, kind, sub string) []string {
	var order []string
	if kind == "verify" {
		var v report.Verify
		if b, err := os.ReadFile(filepath.Join(dir, "verify.json")); err == nil && json.Unmarshal(b, &v) == nil {
			for _, r := range v.Rows {
				order = append(order, r.Scenario)
			}
		}
		for _, s := range scenario.Battery() {
			if !slices.Contains(order, s.Name) {
				order = append(order, s.Name)
			}
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
	for _, n := range names {
		if b := filepath.Base(n); b != "latest" && !slices.Contains(order, b) {
			order = append(order, b)
		}
	}
	return order
}

// shrinkBreaks shrinks, after a verify (--shrink), each scenario's first
// broken run of its dir, each within budget, into that run's dir/shrink;
// a shrink that cannot run says why in one line and the next goes on.
func shrinkBreaks(ctx context.Context, dir string, budget time.Duration) {
	broke, _, err := brokenRuns(dir)
	if err != nil {
		return // nothing broke
	}
	for _, d := range broke {
		if ctx.Err() != nil {
			return
		}
		scen := filepath.Base(filepath.Dir(d))
		fmt.Printf("shrink %s (--from %s, budget %v):\n", scen, d, budget)
		if _, err := shrinkCmd(ctx, []string{"--from", d, "--budget", budget.String(), "--quiet"}); err != nil {
			fmt.Printf("shrink %s: %v\n", scen, err)
		}
	}
}

// scenarioRunArgs is the lockcheck run command line of a verify
// scenario's run or a matrix cell's (run.json's args end in
// scenario=NAME or cell=LOCK/NAME, then seed=N): the lock flags of the
// command, then the run's workload, faults, topology, check and seed as
// run.json records them, with what the scenario sets that run.json does
// not (replication lag, failover).
func scenarioRunArgs(info report.RunInfo) ([]string, error) {
	s, err := scenarioOfRun(info.Args)
	if err != nil {
		return nil, err
	}
	lock, backend, err := lockArgsOf(info, s)
	if err != nil {
		return nil, err
	}
	if info.Workload.Rate > 0 {
		return nil, errors.New("a run of an arrival rate: shrink runs the clients here, each its own")
	}
	a := runArgs(append([]string{"lockcheck", "run"}, lock...))
	a.workload(info.Workload)
	a.servers(info, s, backend)
	return append(a, fmt.Sprintf("--seed=%d", info.Seed)), nil
}

// scenarioOfRun is the scenario a verify's run (scenario=NAME at the end
// of its command) or a matrix cell's (cell=LOCK/NAME) ran.
func scenarioOfRun(cmdArgs []string) (scenario.Scenario, error) {
	var scen string
	for _, a := range cmdArgs[2:] {
		if v, ok := strings.CutPrefix(a, "scenario="); ok {
			scen = v
		} else if v, ok := strings.CutPrefix(a, "cell="); ok {
			_, scen, _ = strings.Cut(v, "/")
		}
	}
	if scen == "" {
		return scenario.Scenario{}, fmt.Errorf("its command %q is a %s, not one of its scenario runs: give a run dir under its runs/ (or cells/), or the %s's own dir", strings.Join(cmdArgs, " "), cmdArgs[1], cmdArgs[1])
	}
	return scenario.Lookup(scen)
}

// lockArgsOf are the flags of a verify's or matrix's command that say
// which lock, on which backend, a run of scenario s ran, and the backend.
func lockArgsOf(info report.RunInfo, s scenario.Scenario) ([]string, string, error) {
	cmdArgs := info.Args
	var args []string
	carry := func(fs *flag.FlagSet, names ...string) {
		fs.Visit(func(f *flag.Flag) {
			if !slices.Contains(names, f.Name) {
				return
			}
			v := f.Value.String()
			if f.Value.Type() == "stringSlice" {
				v = strings.Trim(v, "[]")
			}
			args = append(args, "--"+f.Name+"="+v)
		})
	}
	ext := flag.NewFlagSet("", flag.ContinueOnError)
	externalFlags(ext, &externalOpts{})
	var extNames []string
	ext.VisitAll(func(f *flag.Flag) { extNames = append(extNames, f.Name) })
	backend := cluster.Local
	if cmdArgs[1] == "verify" {
		var o verifyOpts
		fs := verifyFlags(&o)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(cmdArgs[2:]); err != nil {
			return nil, "", fmt.Errorf("its command %q: %v", strings.Join(cmdArgs, " "), err)
		}
		if o.agents > 0 {
			return nil, "", errors.New("a verify on agents: shrink runs the clients here, each its own")
		}
		carry(fs, append([]string{"lock", "lock-spec", "lock-cmd", "name", "lock-cmd-per-client", "backend", "redis-server"}, extNames...)...)
		if o.lockCmd != "" && !o.perClient && (s.Nemesis.ActsOnClients() || s.MovesMaster()) {
			// verify ran this scenario with a process per client.
			args = append(args, "--lock-cmd-per-client")
		}
		return args, o.backend, nil
	}
	// A matrix cell: its lock by name, a built-in one.
	if _, err := lockimpl.All().Lookup(info.Lock); err != nil {
		return nil, "", fmt.Errorf("a matrix cell of %s, a lock of the matrix's --lock-spec or --lock-cmd: shrink a lockcheck run of it", info.Lock)
	}
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.ParseErrorsWhitelist.UnknownFlags = true
	fs.StringVar(&backend, "backend", cluster.Local, "")
	externalFlags(fs, &externalOpts{})
	if err := fs.Parse(cmdArgs[2:]); err != nil {
		return nil, "", fmt.Errorf("its command %q: %v", strings.Join(cmdArgs, " "), err)
	}
	args = append(args, "--lock="+info.Lock)
	carry(fs, append([]string{"backend"}, extNames...)...)
	return args, backend, nil
}

// runArgs is a lockcheck run's command line being written out.
type runArgs []string

// add appends --name=v, unless v is empty.
func (a *runArgs) add(name, v string) {
	if v != "" {
		*a = append(*a, "--"+name+"="+v)
	}
}

// num appends --name=v, unless v is 0.
func (a *runArgs) num(name string, v float64) {
	if v != 0 {
		a.add(name, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

// workload writes out a run's recorded workload as its flags.
func (a *runArgs) workload(w report.RunWorkload) {
	a.num("clients", float64(w.Clients))
	a.num("keys", float64(w.Keys))
	a.add("key-dist", w.KeyDist)
	a.num("ops", float64(w.Ops))
	a.add("duration", w.Duration)
	a.add("ttl", w.TTL)
	a.add("hold", w.Hold)
	a.add("hold-dist", w.HoldDist)
	a.add("retry", w.Retry)
	a.add("think", w.Think)
	a.add("op-timeout", w.OpTimeout)
	a.add("margin", w.Margin)
	a.add("extend-every", w.ExtendEvery)
	a.num("skip-release", w.SkipRelease)
	a.num("ttl-factor", w.TTLFactor)
	a.num("readers", w.Readers)
	if w.Permits > 1 {
		a.num("permits", float64(w.Permits))
	}
	a.add("wait", w.Wait)
	a.num("reenter", float64(w.Reenter))
	a.num("pool-per-client", float64(w.PoolPerClient))
}

// servers writes out a run's faults, servers and check as its flags (what
// run.json does not record, scenario s says).
func (a *runArgs) servers(info report.RunInfo, s scenario.Scenario, backend string) {
	n := info.Nemesis
	if len(n.Faults) > 0 {
		a.add("nemesis", strings.Join(n.Faults, ","))
		a.add("nemesis-interval", n.Interval)
		a.add("nemesis-duration", n.Duration)
		a.add("nemesis-targets", n.Targets)
		a.add("restart-delay", n.RestartDelay)
	}
	if backend != cluster.External {
		a.add("topology", info.Topology)
		a.num("nodes", float64(info.Masters))
		a.add("persistence", cmp.Or(n.Persistence, s.Persistence))
		if s.ReplicationLag > 0 {
			a.add("repl-lag", s.ReplicationLag.String())
		}
		a.add("failover", s.Failover)
	}
	for _, c := range info.RedisConf {
		a.add("redis-conf", c)
	}
	a.add("clock-tolerance", info.ClockTolerance)
	a.add("check-timeout", info.CheckTimeout)
}

// runPlan is the plan of a run by its command line: a plan's, or that
// of lockcheck run's flags.
func runPlan(args []string) (shrink.Plan, error) {
	if len(args) < 2 || args[0] != "lockcheck" || args[1] != "run" {
		return shrink.Plan{}, fmt.Errorf("its command %q is not a lockcheck run, nor a verify scenario's or a matrix cell's (shrink a lockcheck run of what it ran)", strings.Join(args, " "))
	}
	var o runOpts
	fs := runFlags(&o)
	if err := fs.Parse(args[2:]); err != nil {
		return shrink.Plan{}, err
	}
	if o.plan != "" {
		return shrink.Load(o.plan)
	}
	if o.agents.Agents > 0 || o.w.Rate > 0 {
		return shrink.Plan{}, errors.New("a run on agents or of an arrival rate: shrink runs the clients here, each its own")
	}
	cfg, _, err := o.config(fs)
	if err != nil {
		return shrink.Plan{}, err
	}
	w, err := cfg.Workload.WithDefaults()
	if err != nil {
		return shrink.Plan{}, err
	}
	n, err := cfg.Nemesis.WithDefaults()
	if err != nil || w.Duration <= 0 {
		return shrink.Plan{}, errors.Join(err, errors.New("a run bounded by --ops alone: give it a --duration"))
	}
	return shrink.From(args, w, n), nil
}

// planConfig is the run plan p makes: its command's flags, then extra
// (flags of this command line), then p's clients, keys, length and
// windows over them.
func planConfig(p shrink.Plan, extra []string) (harness.Config, *runOpts, error) {
	return planConfigFor(p, extra, nil)
}

// PlanConfig is the run a plan file (lockcheck shrink's plan.json) makes,
// of the lock factory builds, named name, in place of the lock its
// command names (--lock, --lock-spec or --lock-cmd, and the flags that
// describe a process lock, are left out): the regression test a user
// keeps after fixing the lock a shrink found broken (lockchecktest.Replay).
func PlanConfig(path, name string, factory lockimpl.Factory) (harness.Config, error) {
	p, err := shrink.Load(path)
	if err != nil {
		return harness.Config{}, fmt.Errorf("plan %s", err)
	}
	cfg, _, err := planConfigFor(p, nil, func(o *runOpts) {
		o.lock, o.lockSpec, o.lockCmd, o.perClient = "", "", "", false
	})
	if err != nil {
		return cfg, err
	}
	abs, _ := filepath.Abs(path)
	cfg.Lock, cfg.Factory, cfg.Registry, cfg.Args = name, factory, nil, []string{"lockcheck", "run", "--plan=" + abs}
	return cfg, harness.Validate(cfg)
}

// planConfigFor is planConfig, with own (if set) changing the options
// the plan's command line parsed to before they make the run.
func planConfigFor(p shrink.Plan, extra []string, own func(*runOpts)) (harness.Config, *runOpts, error) {
	var o runOpts
	fs := runFlags(&o)
	if err := fs.Parse(append(slices.Clone(p.Args[2:]), extra...)); err != nil {
		return harness.Config{}, nil, usageError{err}
	}
	o.plan = ""
	if own != nil {
		own(&o)
	}
	cfg, _, err := o.config(fs)
	if err != nil {
		return cfg, nil, err
	}
	p.Apply(&cfg.Workload, &cfg.Nemesis)
	return cfg, &o, harness.Validate(cfg)
}

// trial runs a plan once under dir, quietly, bounded by its length and
// the check's time; it keeps the run's results, which the shrink
// removes if no plan keeps them.
func trial(dir string, log io.Writer) shrink.Trial {
	return func(ctx context.Context, p shrink.Plan) (shrink.Outcome, error) {
		cfg, _, err := planConfig(p, nil)
		if err != nil {
			return shrink.Outcome{}, err
		}
		// A dir of its own, which holds only this run (a resumed shrink's
		// runs never land in a kept one's).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return shrink.Outcome{}, err
		}
		own, err := os.MkdirTemp(dir, "run-")
		if err != nil {
			return shrink.Outcome{}, err
		}
		cfg.OutDir, cfg.Name, cfg.Progress, cfg.Cluster.Say = own, "run", nil, func(string) {}
		bound := p.Duration + trialSlack
		tctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		res, err := harness.Run(tctx, cfg)
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			fmt.Fprintf(log, "shrink: run %s passed its bound (%v: the plan's length + %v): not reproduced\n", filepath.Base(own), bound, trialSlack)
		}
		out := shrink.Outcome{Dir: own}
		if res != nil {
			out.Breaks = shrink.FindingsOf(res.Findings)
		}
		return out, err
	}
}

// trialSlack is a trial's bound past its plan's length: Redis's start,
// the heal, the check.
const trialSlack = 3 * time.Minute

// planCmd is lockcheck run --plan FILE: the plan run runs times, each
// run's verdict, then how many broke.
func planCmd(ctx context.Context, path string, runs int, args []string) (int, error) {
	p, err := shrink.Load(path)
	if err != nil {
		return exitUsage, usageError{fmt.Errorf("--plan %s", err)}
	}
	cfg, _, err := planConfig(p, args)
	if err != nil {
		return exitUsage, err
	}
	abs, _ := filepath.Abs(path)
	cfg.Args = []string{"lockcheck", "run", "--plan=" + abs}
	sweepLeftovers()
	worst, broke, made := exitValid, 0, 0
	for i := 0; i < max(runs, 1) && ctx.Err() == nil; i++ {
		code, err := runOnce(ctx, cfg)
		if err != nil {
			return code, err
		}
		made++
		if code == exitInvalid {
			broke++
		}
		if rank[code] > rank[worst] {
			worst = code
		}
	}
	if runs > 1 {
		fmt.Printf("plan: %d of %d runs broke\n", broke, made)
	}
	return worst, nil
}
