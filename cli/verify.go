package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockcheck/lockcheck/battery"
	"github.com/lockcheck/lockcheck/scenario"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// verifyOpts is what the verify flags fill.
type verifyOpts struct {
	runOpts
	cfg battery.VerifyConfig
	// overrides of every scenario's workload
	clients, keys   int
	permits         int
	wait            time.Duration
	readers         float64
	reenter         int
	ttl, hold, dur  time.Duration
	extendEvery     time.Duration
	backend, server string
	expect          string
	agents          int
	shrink          time.Duration
}

func verifyFlags(o *verifyOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	lockFlags(fs, &o.runOpts)
	fs.StringVar(&o.name, "name", "", "the lock's name in the results (--lock-cmd)")
	fs.BoolVar(&o.perClient, "lock-cmd-per-client", false, "--lock-cmd: one process per client in every scenario (default: in the scenarios that pause or crash clients or move the master)")
	fs.BoolVar(&o.cfg.Watchdog, "lock-watchdog", false, "the lock keeps its leases alive by itself (a --lock-cmd or --lock-spec with a watchdog): the extend scenario adds no client-side extends")
	fs.StringVar(&o.topology, "lock-topology", "", "--lock-cmd: the one topology the lock can use (single: a lock with no Sentinel or Cluster client); scenarios on another are n/a")
	fs.BoolVar(&o.cfg.NoExtend, "lock-no-extend", false, "the lock has no extend (and no watchdog): the scenarios that extend leases are n/a")
	fs.StringSliceVar(&o.cfg.Scenarios, "scenario", nil, "run only these scenarios (default all; see below)")
	fs.DurationVar(&o.cfg.Budget, "budget", battery.DefaultVerifyBudget, "time for the whole battery: a scenario short of its coverage runs again with the next seed while its share lasts")
	fs.Int64Var(&o.cfg.Seed, "seed", 0, "seed of each scenario's first run (0: from the clock)")
	fs.StringSliceVar(&o.cfg.Require, "require", nil, "turn findings into gates: fencing (mutual exclusion under pauses), server (every server scenario), or scenario names")
	fs.StringVar(&o.expect, "expect", "", `file of "SCENARIO lease|mutex valid|invalid" lines: a guarantee that differs fails verify (exit 1), gated or not`)
	fs.DurationVar(&o.shrink, "shrink", 0, "after each battery, shrink each scenario's first broken run to its smallest plan, each within this budget (lockcheck shrink --from RUN --budget D, into RUN/shrink); 0: none")
	fs.BoolVar(&o.cfg.KeepGoing, "keep-going", false, "run every scenario even after one broke (and, with --seeds, every battery)")
	fs.IntVar(&o.seeds, "seeds", 1, "batteries, with seeds --seed, --seed+1000, ...; stops at the first that is not valid unless --keep-going")
	fs.StringVar(&o.out, "out", "results", "results root: verify goes to OUT/verify/<timestamp>")
	fs.IntVar(&o.clients, "clients", 0, "override every scenario's client count")
	fs.IntVar(&o.keys, "keys", 0, "override every scenario's key count")
	fs.IntVar(&o.permits, "permits", 0, "permits a key has: more than 1 verifies a semaphore (--lock semaphore) by its own model")
	fs.DurationVar(&o.wait, "wait", 0, "every acquire waits up to this long inside the lock (a blocking lock: --lock setnx-block), its waiters judged by the lock's wake-up bound")
	fs.Float64Var(&o.readers, "readers", 0, "fraction of acquires in read mode: more than 0 verifies a read-write lock (--lock rwlock) by its own model")
	fs.IntVar(&o.reenter, "reenter", 0, "depth every holder re-enters to, writing in each nested section: verifies a reentrant lock (--lock reentrant) by its own model")
	fs.DurationVar(&o.ttl, "ttl", 0, "override every scenario's TTL")
	fs.DurationVar(&o.hold, "hold", 0, "override every scenario's mean hold")
	fs.DurationVar(&o.dur, "duration", 0, "override every scenario's run length")
	fs.DurationVar(&o.extendEvery, "extend-every", 0, "clients of every scenario extend their lease at this interval")
	fs.StringVar(&o.backend, "backend", cluster.Local, "where Redis runs: local, docker or external (a Redis you run: its server scenarios are n/a)")
	externalFlags(fs, &o.ext)
	thresholdFlag(fs, &o.thresholds)
	fs.IntVar(&o.agents, "agents", 0, "play every scenario's clients on N agent processes of this machine, each run judged as one history (see Clients on many machines)")
	fs.StringVar(&o.server, "redis-server", "", "redis-server program (default: found on PATH)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck verify [--lock NAME | --lock-spec FILE | --lock-cmd CMD] [flags]\n\n"+
			"runs a battery of scenarios, each until its coverage is met, and gates on the lock's guarantees\n\nflags:")
		fs.PrintDefaults()
		fmt.Fprintln(os.Stderr, "\nscenarios:")
		for _, s := range scenario.Battery() {
			fmt.Fprintf(os.Stderr, "  %-14s %s\n", s.Name, s.Description)
		}
	}
	return fs
}

func verifyCmd(ctx context.Context, args []string) (int, error) {
	var o verifyOpts
	fs := verifyFlags(&o)
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	cfg := &o.cfg
	if err := o.config(fs, args); err != nil {
		return exitUsage, err
	}
	sweepLeftovers()
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	seed := cfg.Seed
	return eachSeed(ctx, o.seeds, cfg.KeepGoing, func(i int) (int, error) {
		cfg.Seed = seed + int64(i)*1000
		fmt.Fprintf(os.Stderr, "lockcheck verify: %s, budget %v, seed %d\n", cfg.Lock.Lock, cfg.Budget, cfg.Seed)
		v, dir, err := battery.Verify(ctx, *cfg)
		if err != nil {
			if dir != "" {
				fmt.Fprintf(os.Stderr, "lockcheck: what ran is in %s\n", dir)
			}
			return failed(err)
		}
		report.TextVerify(os.Stdout, v, dir)
		if o.shrink > 0 {
			shrinkBreaks(ctx, dir, o.shrink)
		}
		failed := 0
		for _, r := range v.Rows {
			failed += len(r.ThresholdsFailed)
		}
		if code := exitFor(v.Verdict); code != exitValid || failed == 0 {
			return code, nil
		}
		return exitThreshold, nil
	})
}

// config completes the battery's config from the parsed flags, and
// checks all of it before anything starts.
func (o *verifyOpts) config(fs *flag.FlagSet, args []string) error {
	cfg := &o.cfg
	switch {
	case o.shrink < 0:
		return usageError{fmt.Errorf("--shrink %v: want a budget for each break's shrink (or 0: none)", o.shrink)}
	case o.shrink > 0 && o.agents > 0:
		return usageError{errors.New("--shrink with --agents: a shrink runs the clients here, each its own; verify without --agents to shrink its breaks")}
	}
	ext, thresholds, err := o.externalAndThresholds(fs, o.backend)
	if err != nil {
		return err
	}
	cfg.Lock = harness.Config{Lock: o.lock, Cluster: cluster.Config{Backend: o.backend, RedisServer: o.server, External: ext}, Thresholds: thresholds}
	if err := o.ownLock(fs, &cfg.Lock); err != nil {
		return err
	}
	if o.agents > 0 {
		if cfg.Lock.Spawn, err = os.Executable(); err != nil {
			return err
		}
		cfg.Lock.Agents = o.agents
	}
	if o.lockCmd != "" && !o.perClient {
		// Pauses and crashes act on a process of the client's own, and
		// each client follows a new master on its own.
		per := cfg.Lock
		if err := o.userLock(&per, cmdLock(per.Lock, o.lockCmd, o.topology, true)); err != nil {
			return err
		}
		cfg.ClientFaultLock = &per
	}
	if o.expect != "" {
		if cfg.Expect, err = battery.ReadVerifyExpect(o.expect); err != nil {
			return err
		}
	}
	cfg.Workload = o.override
	cfg.OutDir, cfg.Args = o.out, append([]string{"lockcheck", "verify"}, args...)
	if !o.quiet {
		cfg.Progress = os.Stderr
	}
	return battery.ValidateVerify(*cfg)
}

// override applies the workload flags to every scenario.
func (o *verifyOpts) override(w *workload.Config) {
	w.Clients, w.Keys = cmp.Or(o.clients, w.Clients), cmp.Or(o.keys, w.Keys)
	w.TTL, w.Hold, w.Duration = cmp.Or(o.ttl, w.TTL), cmp.Or(o.hold, w.Hold), cmp.Or(o.dur, w.Duration)
	w.ExtendEvery = cmp.Or(o.extendEvery, w.ExtendEvery)
	w.Permits = cmp.Or(o.permits, w.Permits)
	w.Wait = cmp.Or(o.wait, w.Wait)
	w.Readers = cmp.Or(o.readers, w.Readers)
	w.Reenter = cmp.Or(o.reenter, w.Reenter)
}
