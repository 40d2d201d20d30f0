package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
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
	redisConf       []string
	persistence     string
	topology        string
	nodes           int
	backend, image  string
	replLag         time.Duration
	clockSkew       time.Duration
	failover        string
	restartDelay    time.Duration
	check           checker.Options
	redisServer     string
	quiet           bool
	seeds           int
	keepGoing       bool
	perClient       bool
	ext             externalOpts
	thresholds      []string
	metrics         string
	agents          agentOpts
	linger          time.Duration
	// plan is --plan: a plan file (lockcheck shrink's) run as written,
	// runs times.
	plan string
	runs int
}

// agentOpts are the coordinator's flags: clients on agents.
type agentOpts struct {
	// Options are what the flags set directly (--agents, --listen,
	// --join-timeout); apply derives the rest from the flags below.
	agent.Options
	tokenFile string
	spawn     bool
	listenSet bool
	tlsCert   string
	tlsKey    string
}

func agentFlags(fs *flag.FlagSet, a *agentOpts) {
	fs.IntVar(&a.Agents, "agents", 0, "play the clients on N agents (lockcheck agent --join), each a share, judged as one history; this run is their coordinator")
	fs.StringVar(&a.Listen, "listen", "127.0.0.1:7170", "--agents: the coordinator's address for its agents")
	fs.DurationVar(&a.JoinTimeout, "join-timeout", agent.DefaultJoinTimeout, "--agents: how long to wait for every agent to join")
	fs.StringVar(&a.tlsCert, "agent-tls-cert", "", "--agents: serve the agents over TLS with this certificate (PEM), with --agent-tls-key; agents then join with --tls")
	fs.StringVar(&a.tlsKey, "agent-tls-key", "", "--agents: the key of --agent-tls-cert (PEM)")
	fs.BoolVar(&a.spawn, "spawn-agents", false, "--agents: start the agents here, as processes of this machine (to try agents, or scale out over cores)")
	fs.StringVar(&a.tokenFile, "agent-token-file", "", "--agents: read the agent token from this file (default: $"+agentTokenEnv+")")
}

// apply sets cfg up as the coordinator of a.Agents agents.
func (a agentOpts) apply(cfg *harness.Config) error {
	if a.Agents == 0 {
		return nil
	}
	token, err := agentToken(a.tokenFile)
	if err != nil {
		return err
	}
	cfg.Options = a.Options
	cfg.Token = token
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return usageError{errors.New("--agent-tls-cert and --agent-tls-key go together")}
	}
	if a.tlsCert != "" {
		c, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
		if err != nil {
			return usageError{fmt.Errorf("--agent-tls-cert/--agent-tls-key: %w", err)}
		}
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c}}
		if a.spawn {
			return usageError{errors.New("--spawn-agents with --agent-tls-cert: agents on this machine join over loopback; leave TLS out")}
		}
	}
	if a.spawn {
		if cfg.Spawn, err = os.Executable(); err != nil {
			return err
		}
		if !a.listenSet {
			cfg.Listen = "127.0.0.1:0"
		}
	}
	cfg.Listening = func(addr string) {
		fmt.Fprintf(os.Stderr, "lockcheck: coordinator listening on %s for %d agents: lockcheck agent --join %s\n", addr, a.Agents, addr)
	}
	return nil
}

// lockFlags declares the lock under test, the same on run and verify: a
// built-in lock, a spec of Lua scripts, or a program.
func lockFlags(fs *flag.FlagSet, o *runOpts) {
	fs.StringVar(&o.lock, "lock", "setnx", "lock implementation (see lockcheck list)")
	fs.StringVar(&o.lockSpec, "lock-spec", "", "lock under test from a TOML file of Lua scripts (see examples/specs)")
	fs.StringVar(&o.lockCmd, "lock-cmd", "", "lock under test as a program in any language, spoken to in JSON lines (see docs/own-lock.md)")
}

func runFlags(o *runOpts) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	lockFlags(fs, o)
	fs.BoolVar(&o.perClient, "lock-cmd-per-client", false, "--lock-cmd: one process per client, so pause-client stops the process (SIGSTOP) and crash-client kills it (SIGKILL)")
	fs.DurationVar(&o.w.ExtendEvery, "extend-every", 0, "clients extend their lease by the TTL at this interval while they hold it (a client-side watchdog for any lock)")
	fs.IntVar(&o.w.Clients, "clients", workload.DefaultClients, "concurrent clients")
	fs.IntVar(&o.w.Keys, "keys", workload.DefaultKeys, "lock keys the clients contend for")
	fs.StringVar(&o.w.KeyDist, "key-dist", workload.KeyUniform, "key choice: uniform or zipf")
	fs.DurationVar(&o.w.Duration, "duration", workload.DefaultDuration, "run length (0: until --ops)")
	fs.Int64Var(&o.w.Ops, "ops", 0, "stop after this many acquire attempts (0: no bound)")
	fs.IntVar(&o.w.Permits, "permits", 1, "permits a key has: more than 1 runs a semaphore (--lock semaphore), judged as one")
	fs.IntVar(&o.w.PoolPerClient, "pool-per-client", 0, "give each client a lock of its own whose Redis client has a pool of N connections, as each instance of an application has (the pool fault takes them; 0: one lock for all, or 2 under --nemesis pool)")
	fs.DurationVar(&o.w.Wait, "wait", 0, "each acquire waits up to this long inside the lock (a blocking lock: --lock setnx-block), its waiters judged by the lock's wake-up bound")
	fs.Float64Var(&o.w.Readers, "readers", 0, "fraction of acquires in read mode: more than 0 runs a read-write lock (--lock rwlock), judged as one")
	fs.IntVar(&o.w.Reenter, "reenter", 0, "depth each holder re-enters to, writing in every nested section (--lock reentrant), judged as a reentrant lock")
	fs.DurationVar(&o.w.TTL, "ttl", workload.DefaultTTL, "lock TTL")
	fs.DurationVar(&o.w.Hold, "hold", workload.DefaultHold, "mean time a client wants the lock")
	fs.StringVar(&o.w.HoldDist, "hold-dist", workload.HoldExp, "hold time distribution: fixed, exp or uniform")
	fs.StringVar(&o.w.Retry, "retry", workload.RetryBackoff, "acquire retry policy: none, fixed:DELAY[,N], backoff:BASE,CAP[,N] (N attempts; without N, until acquired) or backoff (= backoff:50ms,1s,5)")
	fs.StringVar(&o.w.RetryJitter, "retry-jitter", workload.JitterFull, "jitter of each retry delay d: full (uniform in [0,d)), equal (d/2 plus uniform in [0,d/2)) or none")
	fs.Float64Var(&o.w.SkipRelease, "skip-release", 0, "fraction of critical sections that end without a release (code that returns early and never reaches its unlock)")
	fs.Float64Var(&o.w.TTLFactor, "ttl-factor", report.DefaultTTLFactor, "factor of the TTL advice's rule \"p99 hold × factor\" (results.json ttl_advice)")
	fs.DurationVar(&o.w.Think, "think", 0, "pause between a release and the next acquire")
	fs.Int64Var(&o.w.Seed, "seed", 0, "seed of every random choice (0: from the clock; the run records it)")
	fs.IntVar(&o.seeds, "seeds", 1, "runs, with seeds --seed, --seed+1, ...; stops at the first that is not valid unless --keep-going")
	fs.BoolVar(&o.keepGoing, "keep-going", false, "with --seeds: run every seed even after one is not valid")
	fs.DurationVar(&o.w.OpTimeout, "op-timeout", workload.DefaultOpTimeout, "bound on each Redis operation; one that runs out is indeterminate")
	fs.DurationVar(&o.w.Margin, "margin", 0, "clients leave the critical section this long before the lease deadline (default 5ms + 10% of the TTL)")
	fs.StringSliceVar(&o.nemesisList, "nemesis", nil, "faults to inject, comma-separated, one at a time; a+b starts a and b together (see lockcheck list)")
	fs.StringVar(&o.nemesis.Targets, "nemesis-targets", nemesis.TargetOne, "nodes a fault on Redis nodes acts on: "+strings.Join(nemesis.Targets, ", ")+" (primaries first); add ,agent:one|minority|all for kill-agent")
	fs.StringArrayVar(&o.redisConf, "redis-conf", nil, `"name value" given to every Redis node, as in redis.conf (repeatable): e.g. "min-replicas-to-write 1"`)
	fs.DurationVar(&o.nemesis.Interval, "nemesis-interval", nemesis.DefaultInterval, "time between two faults")
	fs.DurationVar(&o.nemesis.Duration, "nemesis-duration", nemesis.DefaultDuration, "how long each fault stays on")
	fs.StringVar(&o.topology, "topology", "", "single (one node), sentinel (master, two replicas, three sentinels), redlock (--nodes independent masters) or cluster (Redis Cluster: --nodes masters with a replica each); default single, redlock for the Redlock locks")
	fs.StringVar(&o.backend, "backend", cluster.Local, "where Redis runs: local (redis-server processes), docker (containers on a network made for the run) or external (a Redis you run: --redis, --sentinel or --cluster)")
	externalFlags(fs, &o.ext)
	thresholdFlag(fs, &o.thresholds)
	rateFlag(fs, &o.w.Rate)
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics while the clients run (ADDR [HOST]:PORT; HOST defaults to 127.0.0.1)")
	fs.StringVar(&o.image, "image", cluster.DefaultImage, "docker backend: the Redis image; if not present it is built from the host's redis-server (never pulled)")
	fs.IntVar(&o.nodes, "nodes", 0, "masters of the redlock topology (default 5) or the cluster topology (default 3)")
	fs.DurationVar(&o.replLag, "repl-lag", 0, "sentinel and cluster topologies: delay the replication stream by this much (asynchronous replication, made visible)")
	fs.StringVar(&o.failover, "failover", cluster.FailoverForce, "how the failover and partition faults promote a replica: force (at once) or detect (Sentinel's down-after-milliseconds or the cluster's cluster-node-timeout decides, the old master serving until it notices)")
	fs.StringVar(&o.persistence, "persistence", "none", "Redis persistence: none, aof-everysec or aof-always")
	fs.DurationVar(&o.clockSkew, "redis-clock-skew", 0, "run every Redis node's wall clock this far ahead of the clients' (negative: behind) from its start, through the clock shim (local backend): what a lock that computes expiry on the client's clock (SET PXAT) meets")
	fs.DurationVar(&o.restartDelay, "restart-delay", 0, "how long kill-redis keeps a node down before restarting it")
	fs.StringVar(&o.out, "out", "results", "results root")
	fs.StringVar(&o.name, "name", "", "run name: results go to OUT/NAME/<timestamp> (default the lock)")
	checkFlags(fs, &o.check)
	fs.StringVar(&o.redisServer, "redis-server", "", "redis-server program (default: found on PATH)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	agentFlags(fs, &o.agents)
	fs.StringVar(&o.plan, "plan", "", "run a plan file (lockcheck shrink writes one): its clients, keys, length and fault windows over its command's flags; flags given here override its command's")
	fs.IntVar(&o.runs, "runs", 1, "--plan: run the plan this many times, and say how many broke")
	fs.DurationVar(&o.linger, "linger", 0, "after the run, stay up this long (a pod whose results kubectl cp fetches; lockcheck k8s: 1h)")
	return fs
}

func runCmd(ctx context.Context, args []string) (int, error) {
	var o runOpts
	fs := runFlags(&o)
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	if o.plan != "" {
		return planCmd(ctx, o.plan, o.runs, args)
	}
	sweepLeftovers()
	cfg, code, err := o.config(fs)
	if err != nil {
		return code, err
	}
	seed := o.w.Seed
	code, err = eachSeed(ctx, o.seeds, o.keepGoing, func(i int) (int, error) {
		cfg.Workload.Seed = seed + int64(i)
		cfg.Args = reproduce(fs, cfg.Workload.Seed)
		return runOnce(ctx, cfg)
	})
	if o.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "lockcheck: exit %d; staying up %v so that the results can be copied (Ctrl-C ends it)\n", code, o.linger)
		select {
		case <-ctx.Done():
		case <-time.After(o.linger):
		}
	}
	return code, err
}

// config is the run the flags in fs (parsed into o) ask for, checked,
// or the exit status of what is wrong with it.
func (o *runOpts) config(fs *flag.FlagSet) (harness.Config, int, error) {
	if o.w.Seed == 0 {
		o.w.Seed = time.Now().UnixNano()
	}
	if !fs.Changed("duration") && fs.Changed("ops") {
		o.w.Duration = 0
	}
	o.nemesis.Faults = o.nemesisList
	ext, thresholds, err := o.externalAndThresholds(fs, o.backend)
	if err != nil {
		return harness.Config{}, exitUsage, err
	}
	if o.clockSkew != 0 && o.backend != cluster.Local {
		return harness.Config{}, exitUsage, usageError{fmt.Errorf("--redis-clock-skew needs --backend local (the clock shim runs under local redis-server processes), not %s", o.backend)}
	}
	cfg := harness.Config{Name: o.name, OutDir: o.out, Lock: o.lock, Workload: o.w, Check: o.check, Thresholds: thresholds, Metrics: o.metrics,
		Nemesis: o.nemesis, RestartDelay: o.restartDelay,
		Cluster: cluster.Config{RedisServer: o.redisServer, Persistence: o.persistence, Topology: o.topology,
			ReplicationLag: o.replLag, ClockSkew: o.clockSkew, Failover: o.failover, Nodes: o.nodes, Backend: o.backend, Image: o.image, RedisConf: o.redisConf, External: ext,
			Say: func(s string) { fmt.Fprintln(os.Stderr, "lockcheck:", s) }},
		Args: reproduce(fs, o.w.Seed)}
	if !o.quiet {
		cfg.Progress = os.Stderr
	}
	if err := o.ownLock(fs, &cfg); err != nil {
		return cfg, exitUsage, err
	}
	o.agents.listenSet = fs.Changed("listen")
	if err := o.agents.apply(&cfg); err != nil {
		return cfg, exitUsage, err
	}
	if err := harness.Validate(cfg); err != nil {
		return cfg, exitUsage, err
	}
	return cfg, 0, nil
}

// externalAndThresholds reads the external Redis's settings (for
// backend) and the --thresholds, shared by run and verify.
func (o *runOpts) externalAndThresholds(fs *flag.FlagSet, backend string) (cluster.ExternalConfig, []report.Threshold, error) {
	ext, err := o.ext.config(fs, backend)
	if err != nil {
		return ext, nil, err
	}
	thresholds, err := parseThresholds(o.thresholds)
	for _, t := range thresholds {
		if err == nil && t.IsRatio() {
			err = usageError{fmt.Errorf("--threshold %q: %s is a figure of lockcheck bench --baseline, not of a run", t.Expr, t.Metric)}
		}
	}
	return ext, thresholds, err
}

// rank orders exit statuses from best to worst: a safety verdict wins
// over a failed threshold.
var rank = map[int]int{exitValid: 0, exitThreshold: 1, exitUnknown: 2, exitInvalid: 3}

// eachSeed calls once for seeds 0..n-1 (n 0 or 1: once), stopping at the
// first exit status that is not valid unless keepGoing, and returns the
// worst: invalid over unknown over valid; an error ends it at once.
func eachSeed(ctx context.Context, n int, keepGoing bool, once func(i int) (int, error)) (int, error) {
	worst := exitValid
	var tally []string
	for i := 0; i < max(n, 1); i++ {
		code, err := once(i)
		if err != nil || (code != exitValid && code != exitInvalid && code != exitUnknown) {
			return code, err
		}
		if code == exitInvalid || (code == exitUnknown && worst == exitValid) {
			worst = code
		}
		tally = append(tally, map[int]string{exitValid: "valid", exitInvalid: "invalid", exitUnknown: "unknown"}[code])
		if (code != exitValid && !keepGoing) || ctx.Err() != nil {
			break
		}
	}
	if n > 1 {
		fmt.Fprintf(os.Stdout, "seeds: %d of %d run: %s\n", len(tally), n, strings.Join(tally, " "))
	}
	return worst, nil
}

// runOnce is one run of cfg: its header, the run, its summary.
func runOnce(ctx context.Context, cfg harness.Config) (int, error) {
	w := cfg.Workload
	fmt.Fprintf(os.Stderr, "lockcheck run: %s, %d clients, %d keys, ttl %v, seed %d\n",
		harness.SafeName(cfg.Lock), w.Clients, w.Keys, w.TTL, w.Seed)
	res, err := harness.Run(ctx, cfg)
	if errors.Is(err, harness.ErrConfig) {
		// A misbehaving lock or a bad setting: no verdict, whatever the
		// checkers made of what was recorded.
		if res != nil && res.Dir != "" {
			fmt.Fprintf(os.Stderr, "lockcheck: what was recorded is in %s\n", res.Dir)
		}
		return exitUsage, err
	}
	if errors.Is(err, harness.ErrWrite) {
		// No verdict over a history or an output not written in full.
		if res != nil && res.Dir != "" {
			fmt.Fprintf(os.Stderr, "lockcheck: no verdict: what was written is in %s\n", res.Dir)
		}
		return exitFailed, err
	}
	if res != nil && res.Findings.Verdict != "" {
		report.TextRun(os.Stdout, res.Text())
	}
	if err != nil {
		return exitFailed, err
	}
	if code := exitFor(res.Verdict); code != exitValid || len(res.ThresholdsFailed()) == 0 {
		return code, nil
	}
	return exitThreshold, nil
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
	if o.perClient && o.lockCmd == "" {
		return errors.New("--lock-cmd-per-client goes with --lock-cmd")
	}
	switch {
	case o.lockSpec != "":
		return o.userLock(cfg, specLock(o.lockSpec))
	case o.lockCmd != "":
		// The harness refuses faults a process cannot meet (OwnClient).
		return o.userLock(cfg, cmdLock(cmp.Or(o.name, "lock-cmd"), o.lockCmd, o.topology, o.perClient))
	}
	return nil
}

// userLock makes cfg's lock the user's, built by mk: the lock under
// test, in a registry of its own. The harness checks what the entry
// declares (its TTL unit, its faults) for every run.
func (o *runOpts) userLock(cfg *harness.Config, mk func() (lockimpl.Entry, error)) error {
	e, err := mk()
	if err != nil {
		return err
	}
	cfg.Lock, cfg.Registry = e.Name, &lockimpl.Registry{}
	cfg.Registry.Register(e)
	return nil
}

// reproduce is the command line that repeats this run, seed included.
func reproduce(fs *flag.FlagSet, seed int64) []string {
	args := []string{"lockcheck", "run"}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" || f.Name == "seeds" || f.Name == "keep-going" {
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
