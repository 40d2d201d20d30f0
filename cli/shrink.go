package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
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
	fs.StringVar(&o.from, "from", "", "the broken run: its dir (a lockcheck run's, or a plan's), its run.json, or a plan file")
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
	info, _, err := report.ReadRunInfo(dir)
	if err != nil {
		return shrink.Plan{}, nil, dir, err
	}
	p, err := runPlan(info.Args)
	if err != nil {
		return p, nil, dir, fmt.Errorf("--from %s: %w", from, err)
	}
	var res report.Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		return p, nil, dir, fmt.Errorf("--from %s: its results: %v (re-check it with lockcheck check)", from, err)
	}
	return p, shrink.FindingsOf(checker.Findings{Checkers: res.Checkers}), dir, nil
}

// runPlan is the plan of a run by its command line: a plan's, or that
// of lockcheck run's flags.
func runPlan(args []string) (shrink.Plan, error) {
	if len(args) < 2 || args[0] != "lockcheck" || args[1] != "run" {
		return shrink.Plan{}, fmt.Errorf("its command %q is not a lockcheck run (a verify or matrix run is replayed by its own command; shrink a lockcheck run of its scenario)", strings.Join(args, " "))
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
