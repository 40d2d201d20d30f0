package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/lockcheck/lockcheck/battery"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/report"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// benchOpts are lockcheck bench's flags.
type benchOpts struct {
	cfg        battery.BenchConfig
	faults     []string
	own        userLockFlags
	backend    string
	ext        externalOpts
	thresholds []string
	cpuProfile string
}

func benchFlags(o *benchOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	cfg := &o.cfg
	fs.StringSliceVar(&cfg.Locks, "lock", []string{"setnx"}, "locks to sweep (comma-separated)")
	o.own.add(fs)
	fs.StringVar(&o.backend, "backend", cluster.Local, "where Redis runs: local (redis-server processes) or external (a Redis you run: --redis, --sentinel or --cluster)")
	externalFlags(fs, &o.ext)
	thresholdFlag(fs, &o.thresholds)
	rateFlag(fs, &cfg.Workload.Rate)
	fs.IntSliceVar(&cfg.Clients, "clients", []int{50, 500, 2000}, "client counts to sweep")
	fs.IntSliceVar(&cfg.Agents, "agents", nil, "agent counts to sweep (0: clients in this process): each cell's clients on that many agent processes of this machine, judged as one history (scale-out)")
	fs.IntSliceVar(&cfg.Keys, "keys", []int{1000000}, "key counts to sweep (many keys: no contention, the harness's own limit)")
	fs.DurationVar(&cfg.Workload.Duration, "duration", 10*time.Second, "length of each cell, warm-up included")
	fs.Int64Var(&cfg.Workload.Ops, "ops", 0, "bound each cell by acquire attempts instead")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "start of each cell left out of its figures, in which the clients measure one P against all and keep the faster (set GOMAXPROCS to fix it instead)")
	fs.DurationVar(&cfg.Workload.TTL, "ttl", 10*time.Second, "lock TTL")
	fs.DurationVar(&cfg.Workload.Hold, "hold", 0, "mean time a client holds the lock (0: acquire and release at once)")
	fs.StringVar(&cfg.Workload.HoldDist, "hold-dist", workload.HoldFixed, "hold time distribution: fixed, exp or uniform")
	fs.StringArrayVar(&cfg.Retries, "retry", []string{workload.RetryNone}, "acquire retry policy (as run's --retry); give it several times to sweep policies side by side")
	fs.StringVar(&cfg.Workload.RetryJitter, "retry-jitter", workload.JitterFull, "jitter of each retry delay: full, equal or none")
	fs.DurationVar(&cfg.Workload.Think, "think", 0, "pause between a release and the next acquire")
	fs.Int64Var(&cfg.Workload.Seed, "seed", 1, "seed of every random choice")
	fs.BoolVar(&cfg.Baseline, "baseline", false, "before each cell, run redis-benchmark (SET NX PX and the release EVALSHA) on its node at its concurrency")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "with --baseline: run each cell and its bare loop in turn this many times, and report the medians (of the rates, and of each round's ratio)")
	fs.StringSliceVar(&o.faults, "nemesis", nil, "faults to inject in every cell")
	fs.DurationVar(&cfg.Nemesis.Interval, "nemesis-interval", nemesis.DefaultInterval, "time between two faults")
	fs.DurationVar(&cfg.Nemesis.Duration, "nemesis-duration", nemesis.DefaultDuration, "how long each fault stays on")
	fs.StringVar(&cfg.OutDir, "out", "results", "results root: the sweep goes to OUT/bench/<timestamp>/")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write lockcheck's own CPU profile of the sweep to this file (go tool pprof), to see what the harness costs")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck bench [flags]   (a sweep of locks × clients × keys; writes bench.csv, bench.json, bench.html)")
		fs.PrintDefaults()
	}
	return fs
}

// config completes the sweep's config from the parsed flags.
func (o *benchOpts) config(fs *flag.FlagSet) error {
	cfg := &o.cfg
	reg, names, err := o.own.registry()
	if err != nil {
		return err
	}
	if cfg.Cluster.External, err = o.ext.config(fs, o.backend); err != nil {
		return err
	}
	cfg.Cluster.Backend = o.backend
	if len(cfg.Agents) > 0 {
		if cfg.AgentBinary, err = os.Executable(); err != nil {
			return err
		}
	}
	if cfg.Thresholds, err = parseThresholds(o.thresholds); err != nil {
		return err
	}
	if cfg.Rounds < 1 || (cfg.Rounds > 1 && !cfg.Baseline) {
		return usageError{fmt.Errorf("--rounds %d: give 1 or more, and more than 1 only with --baseline (a round is a cell's run and its bare loop)", cfg.Rounds)}
	}
	for _, t := range cfg.Thresholds {
		if t.IsRatio() && !cfg.Baseline {
			return usageError{fmt.Errorf("--threshold %q: %s is measured against a baseline: add --baseline", t.Expr, t.Metric)}
		}
	}
	if len(names) > 0 && !fs.Changed("lock") {
		cfg.Locks = nil // the user's rows only, unless --lock asks for more
	}
	cfg.Registry, cfg.Locks = reg, append(cfg.Locks, names...)
	if fs.Changed("ops") && !fs.Changed("duration") {
		cfg.Workload.Duration = 0
	}
	cfg.Nemesis.Faults = o.faults
	cfg.Progress = os.Stderr
	return nil
}

func benchCmd(ctx context.Context, args []string) (int, error) {
	var o benchOpts
	fs := benchFlags(&o)
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	if err := o.config(fs); err != nil {
		return exitUsage, err
	}
	sweepLeftovers()
	tuneGC()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return exitUsage, usageError{fmt.Errorf("--cpuprofile: %w", err)}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return exitUsage, usageError{fmt.Errorf("--cpuprofile: %w", err)}
		}
		defer pprof.StopCPUProfile()
	}
	cells, dir, err := battery.Bench(ctx, o.cfg)
	if len(cells) > 0 {
		report.TextBench(os.Stdout, cells)
	}
	if dir != "" {
		fmt.Printf("\nbench: %s/bench.html (and bench.csv, bench.json)\npeak RSS: %.0f MB\n", dir, float64(harness.PeakRSS())/(1<<20))
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) || len(cells) == 0 {
			return exitFailed, err
		}
		// Interrupted: the cells run so far were judged, and their
		// verdicts stand, as a run's does after Ctrl-C.
		fmt.Printf("bench: interrupted: the verdict is that of the %d cells run\n", len(cells))
	}
	return benchExit(cells), nil
}

// benchExit is the sweep's exit code: its cells' verdicts composed, or
// 99 if they are valid and a threshold failed.
func benchExit(cells []report.BenchRow) int {
	verdicts := make([]checker.Verdict, len(cells))
	failed := 0
	for i, c := range cells {
		verdicts[i] = c.Verdict
		failed += c.ThresholdsFailed
	}
	if code := exitFor(checker.Compose(verdicts...)); code != exitValid || failed == 0 {
		return code
	}
	fmt.Printf("thresholds: %d failed (each cell's results.json says which of its run's)\n", failed)
	for _, c := range cells {
		for _, f := range c.RatiosFailed {
			fmt.Printf("threshold fail  %s %d clients %d keys: %s\n", c.Lock, c.Clients, c.Keys, f)
		}
	}
	return exitThreshold
}

// tuneGC trades memory for client throughput, for lockcheck bench only:
// collecting 4x less often gave 6-9% more acquisitions/s. lockcheck run
// keeps Go's default, because under it memory stays flat over a long run
// (at 10,000 clients, GC percent 400 let RSS climb by 220 MB every 5 s
// towards the limit). GOGC and GOMEMLIMIT, if set, win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(4 << 30)
	}
}
