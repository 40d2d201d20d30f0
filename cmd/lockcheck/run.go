package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// runOpts is what the run flags fill.
type runOpts struct {
	name, out, lock string
	lockSpec        string
	lockCmd         string
	w               workload.Config
	nemesis         nemesis.Config
	nemesisList     []string
	persistence     string
	topology        string
	nodes           int
	backend, image  string
	replLag         time.Duration
	restartDelay    time.Duration
	check           checker.Options
	redisServer     string
	quiet           bool
}

func runFlags(o *runOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.lock, "lock", "setnx", "lock implementation (see lockcheck list)")
	fs.StringVar(&o.lockSpec, "lock-spec", "", "lock under test from a TOML file of Lua scripts (see examples/specs)")
	fs.StringVar(&o.lockCmd, "lock-cmd", "", "lock under test as a program in any language, spoken to in JSON lines (see README)")
	fs.DurationVar(&o.w.ExtendEvery, "extend-every", 0, "clients extend their lease by the TTL at this interval while they hold it (a client-side watchdog for any lock)")
	fs.IntVar(&o.w.Clients, "clients", workload.DefaultClients, "concurrent clients")
	fs.IntVar(&o.w.Keys, "keys", workload.DefaultKeys, "lock keys the clients contend for")
	fs.StringVar(&o.w.KeyDist, "key-dist", workload.KeyUniform, "key choice: uniform or zipf")
	fs.DurationVar(&o.w.Duration, "duration", workload.DefaultDuration, "run length (0: until --ops)")
	fs.Int64Var(&o.w.Ops, "ops", 0, "stop after this many acquire attempts (0: no bound)")
	fs.DurationVar(&o.w.TTL, "ttl", workload.DefaultTTL, "lock TTL")
	fs.DurationVar(&o.w.Hold, "hold", workload.DefaultHold, "mean time a client wants the lock")
	fs.StringVar(&o.w.HoldDist, "hold-dist", workload.HoldExp, "hold time distribution: fixed, exp or uniform")
	fs.StringVar(&o.w.Retry, "retry", workload.RetryBackoff, "acquire retry: none, or backoff (50ms doubling, full jitter, 5 attempts)")
	fs.DurationVar(&o.w.Think, "think", 0, "pause between a release and the next acquire")
	fs.Int64Var(&o.w.Seed, "seed", 0, "seed of every random choice (0: from the clock; the run records it)")
	fs.DurationVar(&o.w.OpTimeout, "op-timeout", workload.DefaultOpTimeout, "bound on each Redis operation; one that runs out is indeterminate")
	fs.DurationVar(&o.w.Margin, "margin", 0, "clients leave the critical section this long before the lease deadline (default 5ms + 10% of the TTL)")
	fs.StringSliceVar(&o.nemesisList, "nemesis", nil, "faults to inject, comma-separated (see lockcheck list)")
	fs.DurationVar(&o.nemesis.Interval, "nemesis-interval", nemesis.DefaultInterval, "time between two faults")
	fs.DurationVar(&o.nemesis.Duration, "nemesis-duration", nemesis.DefaultDuration, "how long each fault stays on")
	fs.StringVar(&o.topology, "topology", "", "single (one node), sentinel (master, two replicas, three sentinels) or redlock (--nodes independent masters); default single, redlock for the Redlock locks")
	fs.StringVar(&o.backend, "backend", cluster.Local, "where Redis runs: local (redis-server processes) or docker (containers on a network made for the run)")
	fs.StringVar(&o.image, "image", cluster.DefaultImage, "docker backend: the Redis image; if not present it is built from the host's redis-server (never pulled)")
	fs.IntVar(&o.nodes, "nodes", cluster.DefaultRedlockNodes, "masters of the redlock topology")
	fs.DurationVar(&o.replLag, "repl-lag", 0, "sentinel topology: delay the replication stream by this much (asynchronous replication, made visible)")
	fs.StringVar(&o.persistence, "persistence", "none", "Redis persistence: none, aof-everysec or aof-always")
	fs.DurationVar(&o.restartDelay, "restart-delay", 0, "how long kill-redis keeps a node down before restarting it")
	fs.StringVar(&o.out, "out", "results", "results root")
	fs.StringVar(&o.name, "name", "", "run name: results go to OUT/NAME/<timestamp> (default the lock)")
	fs.DurationVar(&o.check.ClockTolerance, "clock-tolerance", checker.DefaultClockTolerance, "clock tolerance eps of the lease model")
	fs.DurationVar(&o.check.InfoHorizon, "info-horizon", 0, "how long after it returned an indeterminate op may take effect (default: op timeout + 1s)")
	fs.DurationVar(&o.check.Timeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check; keys not done are unknown")
	fs.StringVar(&o.redisServer, "redis-server", "", "redis-server program (default: found on PATH)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	return fs
}

func runCmd(ctx context.Context, args []string) (int, error) {
	var o runOpts
	fs := runFlags(&o)
	if done, code, err := parse(fs, args); done {
		return code, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("run takes no arguments, got %q", fs.Args())}
	}
	exactly(fs, "clock-tolerance", &o.check.ClockTolerance)
	exactly(fs, "info-horizon", &o.check.InfoHorizon)
	sweepLeftovers()
	if o.w.Seed == 0 {
		o.w.Seed = time.Now().UnixNano()
	}
	if !fs.Changed("duration") && fs.Changed("ops") {
		o.w.Duration = 0
	}
	o.nemesis.Faults = o.nemesisList
	cfg := harness.Config{Name: o.name, OutDir: o.out, Lock: o.lock, Workload: o.w, Check: o.check,
		Nemesis: o.nemesis, RestartDelay: o.restartDelay,
		Cluster: cluster.Config{RedisServer: o.redisServer, Persistence: o.persistence, Topology: o.topology,
			ReplicationLag: o.replLag, Nodes: o.nodes, Backend: o.backend, Image: o.image,
			Say: func(s string) { fmt.Fprintln(os.Stderr, "lockcheck:", s) }},
		Args: reproduce(fs, o.w.Seed)}
	if !o.quiet {
		cfg.Progress = os.Stderr
	}
	if err := o.ownLock(fs, &cfg); err != nil {
		return exitUsage, err
	}
	if err := harness.Validate(cfg); err != nil {
		return exitUsage, err
	}
	fmt.Fprintf(os.Stderr, "lockcheck run: %s, %d clients, %d keys, ttl %v, seed %d\n",
		cfg.Lock, o.w.Clients, o.w.Keys, o.w.TTL, o.w.Seed)
	res, err := harness.Run(ctx, cfg)
	if errors.Is(err, harness.ErrConfig) {
		// A misbehaving lock or a bad setting: no verdict, whatever the
		// checkers made of what was recorded.
		if res != nil && res.Dir != "" {
			fmt.Fprintf(os.Stderr, "lockcheck: what was recorded is in %s\n", res.Dir)
		}
		return exitUsage, err
	}
	if res != nil && res.Findings.Verdict != "" {
		printSummary(os.Stdout, res)
	}
	if err != nil {
		return exitFailed, err
	}
	return exitFor(res.Verdict), nil
}

// ownLock sets cfg up for --lock-spec or --lock-cmd: the user's lock.
func (o *runOpts) ownLock(fs *flag.FlagSet, cfg *harness.Config) error {
	n := 0
	for _, f := range []string{"lock", "lock-spec", "lock-cmd"} {
		if fs.Changed(f) {
			n++
		}
	}
	if n > 1 {
		return errors.New("give one of --lock, --lock-spec and --lock-cmd")
	}
	switch {
	case o.lockSpec != "":
		spec, err := lockimpl.LoadSpec(o.lockSpec)
		if err != nil {
			return err
		}
		if err := spec.CheckTTL(o.w.TTL); err != nil {
			return err
		}
		cfg.Lock, cfg.LockVersion, cfg.Factory = spec.Name, "spec "+o.lockSpec+" sha256:"+spec.Version, spec.Factory
	case o.lockCmd != "":
		// The harness refuses faults a process cannot meet (OwnClient).
		cfg.Lock, cfg.LockVersion = cmp.Or(o.name, "lock-cmd"), "command "+o.lockCmd
		cfg.Registry = &lockimpl.Registry{}
		cfg.Registry.Register(lockimpl.ProcessEntry(cfg.Lock, o.lockCmd, cmp.Or(o.topology, cluster.Single)))
	}
	return nil
}

// reproduce is the command line that repeats this run, seed included.
func reproduce(fs *flag.FlagSet, seed int64) []string {
	args := []string{"lockcheck", "run"}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			return
		}
		v := f.Value.String()
		if f.Value.Type() == "stringSlice" { // pflag shows slices as [a,b]
			v = strings.Trim(v, "[]")
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return append(args, fmt.Sprintf("--seed=%d", seed))
}

func printSummary(w io.Writer, res *harness.Result) {
	s := res.Summary
	secs := res.Elapsed.Seconds()
	fmt.Fprintf(w, "\n%d ops in %v: %.0f ops/s", res.Ops, res.Elapsed.Round(time.Millisecond), float64(res.Ops)/max(secs, 1e-9))
	if ok := s.Ops[history.Acquire][history.OK]; secs > 0 {
		fmt.Fprintf(w, ", %.0f acquisitions/s", float64(ok)/secs)
	}
	if res.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintf(w, "\n\n  %-8s %10s %10s %10s\n", "op", "ok", "fail", "info")
	for _, f := range []history.Func{history.Acquire, history.Write, history.Extend, history.Release} {
		m := s.Ops[f]
		if m[history.OK]+m[history.Fail]+m[history.Info] == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-8s %10d %10d %10d\n", f, m[history.OK], m[history.Fail], m[history.Info])
	}
	fmt.Fprintf(w, "\n  leases cut short %d, late exits %d, lost %d, acquisitions given up %d\n",
		s.CutShort, s.LateExits, s.Lost, s.GiveUps)
	fmt.Fprintf(w, "  faults: clients paused %d, crashed %d; stale writes rejected %d; ops not sent (node down) %d\n",
		s.Paused, s.Crashed, s.StaleRejected, s.NotSent)
	if s.Undone > 0 {
		fmt.Fprintf(w, "  acquisitions undone (no majority either way) %d\n", s.Undone)
	}
	fmt.Fprintf(w, "  peak RSS of lockcheck: %.0f MB\n\n", float64(harness.PeakRSS())/(1<<20))
	if len(res.Faults) > 0 {
		fmt.Fprintln(w, "  fault windows:")
		for _, f := range res.Faults {
			fmt.Fprintf(w, "    %s\n", f)
		}
		fmt.Fprintln(w)
	}
	printChecks(w, res.Findings, res.Dir)
	fmt.Fprintf(w, "verdict: %s\nresults: %s\nreport:  %s\n", strings.ToUpper(string(res.Verdict)), res.Dir,
		filepath.Join(res.Dir, "report.html"))
}

// printChecks prints each checker's verdict and its first violations.
func printChecks(w io.Writer, rep checker.Findings, dir string) {
	for _, c := range rep.Checkers {
		fmt.Fprintf(w, "  %-13s %-8s %s\n", c.Name, c.Verdict, figures(c))
		for i, v := range c.Violations {
			if i == 3 {
				fmt.Fprintf(w, "      ... %d more in %s/results.json\n", c.ViolationCount-3, dir)
				break
			}
			fmt.Fprintf(w, "      %s\n", v.Message)
			if v.File != "" {
				fmt.Fprintf(w, "        see %s/%s\n", dir, v.File)
			}
		}
		if len(c.UnknownKeys) > 0 {
			fmt.Fprintf(w, "      unknown keys: %s\n", strings.Join(c.UnknownKeys, ", "))
		}
	}
	fmt.Fprintln(w)
}

func figures(c checker.Result) string {
	keys := make([]string, 0, len(c.Figures))
	for k := range c.Figures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.Figures[k]))
	}
	if c.ViolationCount > 0 {
		parts = append(parts, fmt.Sprintf("violations=%d", c.ViolationCount))
	}
	return strings.Join(parts, " ")
}
