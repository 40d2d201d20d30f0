package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ext"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// VerifyBase is the workload verify's scenarios adjust: short leases, so
// that a run of a few seconds holds hundreds of them.
var VerifyBase = workload.Config{Clients: 20, Keys: 5, TTL: 200 * time.Millisecond, Hold: 100 * time.Millisecond,
	HoldDist: workload.HoldExp, Retry: workload.RetryBackoff, OpTimeout: 500 * time.Millisecond,
	Margin: 30 * time.Millisecond, Duration: 6 * time.Second}

// DefaultVerifyBudget bounds a whole battery's time: a scenario short of
// its coverage runs again while its share of the budget lasts.
const DefaultVerifyBudget = 5 * time.Minute

// serverWorkload is the server scenarios' workload: leases of a second,
// held most of it, so that a fault every second or two lands on one.
func serverWorkload(w *workload.Config) {
	w.TTL, w.Hold, w.Margin, w.OpTimeout, w.Duration = time.Second, 700*time.Millisecond, 100*time.Millisecond, time.Second, 8*time.Second
}

// stallWorkload is the pause-redis and lost-reply scenarios' workload:
// few keys, so that the acquires a stall leaves indeterminate contend.
func stallWorkload(w *workload.Config) { w.Keys, w.Duration = 3, 8*time.Second }

// VerifyScenario is a scenario of verify's battery: the Scenario it
// runs, and what decides its verdict.
type VerifyScenario struct {
	Scenario
	// Requires are the coverage figures the scenario must reach for its
	// verdict to count: the failure it exists for got its chance.
	Requires checker.Coverage
	// Server marks a server-fault scenario (the deployment table): its
	// breaks are findings unless required.
	Server bool
	// Pauses: clients are paused past their TTL, so mutual exclusion
	// at the resource needs fencing: a break is a finding unless
	// --require fencing.
	Pauses bool
	// Extends: clients keep their leases alive by extends every TTL/3,
	// unless the lock has a watchdog of its own.
	Extends bool
	// Overrun: holds outlive the TTL on purpose, so releases come after
	// expiry; n/a for a lock that keeps its leases alive by itself, whose
	// releases are never late.
	Overrun bool
	// RedlockClients, if set, is the client count for a Redlock lock: an
	// op is a round trip to each of five nodes, and two cores serve fewer
	// clients within redsync's per-node timeout (5% of the TTL).
	RedlockClients int
	// Breaks says what a break in this scenario means where it is a
	// finding (the fault's known effect on a lock without the defence).
	Breaks string
}

// VerifyScenarios is verify's battery, client-side scenarios first: each
// a workload and a fault chosen so that one classic failure gets its
// chance, and the coverage that shows it did.
func VerifyScenarios() []VerifyScenario { return addedScenarios.With(verifyScenarios) }

var addedScenarios ext.Added[VerifyScenario]

// RegisterScenario adds a scenario at the end of verify's battery from
// here on, until the func it returns unregisters it.
func RegisterScenario(s VerifyScenario) (unregister func()) { return addedScenarios.Add(s) }

// killEvery is the kill scenarios' schedule.
var killEvery = nemesis.Config{Faults: []string{"kill-redis"}, Interval: 1500 * time.Millisecond}

var verifyScenarios = []VerifyScenario{
	{Scenario: Scenario{Name: "contention", Description: "200 clients on 5 keys, holds of 0-20 ms under a 1 s TTL: races between acquires",
		Workload: func(w *workload.Config) {
			w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry, w.Margin = 200, time.Second, 10*time.Millisecond, workload.HoldUniform, workload.RetryNone, 0
		}},
		Requires: checker.Coverage{checker.Contended: 2000}},
	{Scenario: Scenario{Name: "overrun", Description: "200 clients on 5 keys, holds of 0-200 ms under a 100 ms TTL: releases after expiry onto keys another holds, racing its acquire",
		Workload: func(w *workload.Config) {
			w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry = 200, 100*time.Millisecond, 100*time.Millisecond, workload.HoldUniform, workload.RetryNone
		}},
		Overrun: true, RedlockClients: 20, Requires: checker.Coverage{checker.LateReleaseTaken: 15}},
	{Scenario: Scenario{Name: "overrun-free", Description: "20 clients on 50 keys (zipf), holds of 0-200 ms under a 100 ms TTL: releases after expiry onto free keys and keys another holds",
		Workload: func(w *workload.Config) {
			w.Clients, w.Keys, w.KeyDist, w.TTL, w.Hold, w.HoldDist, w.Retry = 20, 50, workload.KeyZipf, 100*time.Millisecond, 100*time.Millisecond, workload.HoldUniform, workload.RetryNone
		}},
		Overrun: true, Requires: checker.Coverage{checker.LateReleaseFree: 20, checker.LateReleaseTaken: 20}},
	{Scenario: Scenario{Name: "extend", Description: "3 clients per key, holds of 1 s kept alive by extends every TTL/3, pause-holder: overdue extends onto free keys and keys another holds",
		Workload: func(w *workload.Config) {
			w.Clients, w.Keys, w.TTL, w.Hold, w.HoldDist, w.Margin = 12, 4, 300*time.Millisecond, time.Second, workload.HoldFixed, 60*time.Millisecond
			w.Duration = 8 * time.Second
		},
		Nemesis: nemesis.Config{Faults: []string{"pause-holder"}, Interval: 300 * time.Millisecond, Duration: 300 * time.Millisecond}},
		Extends: true, RedlockClients: 8, Requires: checker.Coverage{checker.LateExtendFree: 3, checker.LateExtendTaken: 3}},
	{Scenario: Scenario{Name: "pause", Description: "pause-client: a holder stops 1.5 TTL (a GC pause) between its acquire and its write, then writes",
		Nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond}},
		Pauses: true, Requires: checker.Coverage{checker.StaleHolder: 3},
		Breaks: "no fencing token: a client paused past its TTL wrote after another acquired"},
	{Scenario: Scenario{Name: "crash", Description: "crash-client: a holder dies between its acquire steps or before its release, and never releases",
		Nemesis: nemesis.Config{Faults: []string{"crash-client"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond}},
		Requires: checker.Coverage{checker.AbandonedTaken: 3}},
	{Scenario: Scenario{Name: "cut-off", Description: "client-partition: holders of 3 s, their 600 ms leases kept alive by extends every TTL/3, cut off Redis for 1 s: their extends time out and their leases run out while they hold",
		Workload: func(w *workload.Config) {
			w.Clients, w.Keys, w.TTL, w.Hold, w.HoldDist, w.OpTimeout = 20, 5, 600*time.Millisecond, 3*time.Second, workload.HoldFixed, 300*time.Millisecond
			w.Duration = 8 * time.Second
		},
		Nemesis: nemesis.Config{Faults: []string{"client-partition"}, Interval: time.Second, Duration: time.Second}},
		Extends: true, RedlockClients: 20, Requires: checker.Coverage{checker.Hit("client-partition"): 3}},
	{Scenario: Scenario{Name: "pause-redis", Description: "Redis stops for 1 s every 2 s under 20 clients on 3 keys: acquires time out (indeterminate), and those queued run when it resumes",
		Workload: stallWorkload, Nemesis: nemesis.Config{Faults: []string{"pause-redis"}, Interval: 2 * time.Second, Duration: time.Second}},
		Requires: checker.Coverage{checker.InfoContended: 20, checker.Hit("pause-redis"): 2}},
	{Scenario: Scenario{Name: "lost-reply", Description: "replies lost after Redis applied the command, under 20 clients on 3 keys: acquires that took effect end indeterminate",
		Workload: stallWorkload, Nemesis: nemesis.Config{Faults: []string{"lost-reply"}, Interval: time.Second, Duration: time.Second}},
		Requires: checker.Coverage{checker.InfoContended: 10}},
	{Scenario: Scenario{Name: "stall-quiet", Description: "Redis stops for 1 s every 4 s under 20 clients on 10 keys, quiet in between for longer than an indeterminate acquire's lease could last: a key that an acquire queued in the stall took must come free after it",
		Workload: func(w *workload.Config) { w.Keys, w.Duration = 10, 10*time.Second },
		Nemesis:  nemesis.Config{Faults: []string{"pause-redis"}, Interval: 3 * time.Second, Duration: time.Second}},
		Requires: checker.Coverage{checker.InfoSettled: 2}},
	{Scenario: Scenario{Name: "kill-none", Description: "kill-redis, restarted at once without persistence", Workload: serverWorkload,
		Nemesis: killEvery, Persistence: "none"},
		Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3}, Breaks: "a restart without persistence forgot held locks"},
	{Scenario: Scenario{Name: "kill-everysec", Description: "kill-redis, restarted at once with appendfsync everysec", Workload: serverWorkload,
		Nemesis: killEvery, Persistence: "aof-everysec"},
		Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3}, Breaks: "a restart lost the last second of writes, held locks among them"},
	{Scenario: Scenario{Name: "kill-always", Description: "kill-redis, restarted at once with appendfsync always", Workload: serverWorkload,
		Nemesis: killEvery, Persistence: "aof-always"},
		Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3}, Breaks: "a restart with every write on disk still broke the lock"},
	{Scenario: serverScenario(killDelayedScenario(time.Second, killEvery.Interval)),
		Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 2}, Breaks: "a node that stayed down longer than the TTL still broke the lock"},
	{Scenario: serverScenario(killExtendScenario()),
		Server: true, Extends: true, RedlockClients: 20, Requires: checker.Coverage{checker.Hit("kill-redis"): 2},
		Breaks: "a node down while held leases were extended broke the lock"},
	{Scenario: serverScenario(failoverScenario),
		Server: true, Requires: checker.Coverage{checker.Hit("failover"): 1}, Breaks: "the promoted replica had not received held locks"},
	{Scenario: serverScenario(partitionScenario),
		Server: true, Requires: checker.Coverage{checker.Hit("partition"): 1}, Breaks: "both sides of the split brain granted the same lock"},
	{Scenario: Scenario{Name: "clock-jump", Description: "a node's clock jumps 2 TTL forward: its keys expire at once", Workload: serverWorkload,
		Nemesis: nemesis.Config{Faults: []string{"clock-jump"}, Interval: 1500 * time.Millisecond, Duration: time.Second}},
		Server: true, Requires: checker.Coverage{checker.Hit("clock-jump"): 3}, Breaks: "a clock jump expired held locks early"},
	{Scenario: serverScenario(clockQuorumScenario),
		Server: true, Requires: checker.Coverage{checker.Hit("clock-quorum"): 2}, Breaks: "a bare majority lost a lease to one node's clock"},
	{Scenario: serverScenario(killQuorumScenario),
		Server: true, Requires: checker.Coverage{checker.Hit("kill-quorum"): 2}, Breaks: "a bare majority lost a lease to one node's restart without persistence"},
}

// serverScenario is s on verify's server workload (serverWorkload, then
// s's own adjustments).
func serverScenario(s Scenario) Scenario {
	if s.Workload == nil {
		s.Workload = serverWorkload
	} else {
		s.Workload = then(serverWorkload, s.Workload)
	}
	return s
}

// VerifyConfig is one lockcheck verify.
type VerifyConfig struct {
	// Lock is the lock under test, as in a run: Lock (in Registry) or
	// Factory, LockVersion, and Cluster's backend and programs. Its
	// Workload, Nemesis, Name and OutDir are the battery's.
	Lock Config
	// ClientFaultLock, if set, is the lock of the scenarios whose faults
	// pause or crash clients (a --lock-cmd with one process per client,
	// so that a pause stops the process).
	ClientFaultLock *Config
	// Watchdog: the lock keeps its leases alive on its own (set for a
	// Factory; a registered lock says so in its Entry).
	Watchdog bool
	// Scenarios picks scenarios by name (default: all).
	Scenarios []string
	// Workload, if set, adjusts every scenario's workload last (the CLI's
	// --clients, --keys, ...).
	Workload func(*workload.Config)
	// Budget bounds the battery's time (0: DefaultVerifyBudget).
	Budget time.Duration
	Seed   int64
	// Require turns findings into gates: a scenario's name, "server"
	// (every server scenario), "fencing" (mutual exclusion under pauses).
	Require []string
	// Expect maps "scenario lease" and "scenario mutex" to the verdict
	// the guarantee must reach (ReadVerifyExpect): a scenario that differs
	// fails verify, whatever its gate.
	Expect map[string]checker.Verdict
	// KeepGoing runs every scenario even after one broke.
	KeepGoing bool
	OutDir    string
	Progress  io.Writer
	Args      []string
}

// Verify runs the battery and writes verify.json, verify.md, verify.html
// and junit.xml into results/verify/<timestamp>/, each scenario's runs
// under runs/. It returns an ErrConfig error for a bad config.
func Verify(ctx context.Context, cfg VerifyConfig) (*report.Verify, string, error) {
	scen, e, err := verifyPlan(cfg)
	if err != nil {
		return nil, "", err
	}
	cfg.Budget = cmp.Or(cfg.Budget, DefaultVerifyBudget)
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	dir, err := newRunDir(cmp.Or(cfg.OutDir, "results"), "verify")
	if err != nil {
		return nil, "", err
	}
	v := &report.Verify{Lock: e.Name, Budget: cfg.Budget.String(), Seed: cfg.Seed, Require: cfg.Require, Args: cfg.Args}
	start := time.Now()
	broke, ownWatchdog := false, e.Watchdog || cfg.Watchdog
	for i, s := range scen {
		row := report.VerifyRow{Scenario: s.Name, Description: s.Description, Server: s.Server, Requires: s.Requires}
		row.LeaseGated, row.MutexGated = gates(s, cfg.Require)
		var topo string
		topo, row.NA = cellTopology(e, e.PerClient || cfg.ClientFaultLock != nil, s.Scenario, cfg.Lock.Cluster)
		if s.Overrun && ownWatchdog && row.NA == "" {
			row.NA = "the lock extends its leases itself: its releases are never late"
		}
		switch {
		case row.NA != "":
			row.Status = report.StatusNA
		case (broke && !cfg.KeepGoing) || ctx.Err() != nil:
			row.Status = report.StatusNotRun
		default:
			share := start.Add(cfg.Budget * time.Duration(i+1) / time.Duration(len(scen)))
			if err := verifyScenario(ctx, cfg, s, topo, ownWatchdog, share, dir, &row); err != nil {
				// What ran is kept and written; the battery stops.
				row.Status, row.Meaning = report.StatusUnknown, err.Error()
				v.Rows = append(v.Rows, row)
				return v, dir, errors.Join(err, finishVerify(v, start, dir))
			}
			expectRow(&row, cfg.Expect)
			broke = broke || row.Status == report.StatusBroken
		}
		if cfg.Progress != nil {
			// One line as each scenario ends; the summary has the rest.
			fmt.Fprintf(cfg.Progress, "  %-14s %s\n", row.Scenario, row.Lines()[0])
		}
		v.Rows = append(v.Rows, row)
	}
	return v, dir, finishVerify(v, start, dir)
}

// PrintVerifyRow prints a scenario's row (report.VerifyRow.Lines), its
// name first.
func PrintVerifyRow(w io.Writer, r report.VerifyRow) {
	for i, line := range r.Lines() {
		name := ""
		if i == 0 {
			name = r.Scenario
		}
		fmt.Fprintf(w, "  %-14s %s\n", name, line)
	}
}

// finishVerify sets the battery's verdict and writes its files.
func finishVerify(v *report.Verify, start time.Time, dir string) error {
	v.Elapsed = time.Since(start).Round(time.Millisecond).String()
	v.Verdict, v.Broken, v.Short = verifyVerdict(v.Rows)
	_ = updateLatest(filepath.Dir(dir), dir)
	return report.WriteVerify(dir, *v)
}

// ValidateVerify says what is wrong with cfg, if anything, before
// anything starts.
func ValidateVerify(cfg VerifyConfig) error {
	_, _, err := verifyPlan(cfg)
	return err
}

// verifyPlan checks cfg and returns its scenarios and lock.
func verifyPlan(cfg VerifyConfig) ([]VerifyScenario, lockimpl.Entry, error) {
	scen, err := pickScenarios(VerifyScenarios(), cfg.Scenarios)
	if err != nil {
		return nil, lockimpl.Entry{}, configErr(err)
	}
	e, err := cfg.Lock.entry()
	if err != nil {
		return nil, e, configErr(err)
	}
	if err := checkRequire(cfg.Require); err != nil {
		return nil, e, configErr(err)
	}
	// Every TTL a scenario will use must suit the lock.
	for _, s := range scen {
		topo, na := cellTopology(e, true, s.Scenario, cfg.Lock.Cluster)
		if na != "" {
			continue
		}
		if err := e.FitsTTL(scenarioRun(cfg, s, topo, e.Watchdog || cfg.Watchdog, 0, "").Workload.TTL); err != nil {
			return nil, e, configErr(fmt.Errorf("scenario %s: %w", s.Name, err))
		}
	}
	if cfg.Lock.Cluster.Backend == cluster.External {
		// The lock must fit the Redis given before any scenario runs.
		if err := Validate(cfg.Lock); err != nil {
			return nil, e, err
		}
	}
	for k := range cfg.Expect {
		name, g, _ := strings.Cut(k, " ")
		if _, err := pickScenarios(VerifyScenarios(), []string{name}); err != nil || (g != "lease" && g != "mutex") {
			return nil, e, configErr(fmt.Errorf("--expect %q: want a scenario (%s) and lease or mutex", k, strings.Join(scenarioNames(VerifyScenarios()), ", ")))
		}
	}
	if cfg.Budget < 0 {
		return nil, e, configErr(fmt.Errorf("--budget %v: want more than 0", cfg.Budget))
	}
	return scen, e, nil
}

// checkRequire refuses a --require that names nothing.
func checkRequire(req []string) error {
	names := scenarioNames(VerifyScenarios())
	for _, r := range req {
		if r != "fencing" && r != "server" && !slices.Contains(names, r) {
			return fmt.Errorf("--require %q: want fencing, server or a scenario (%s)", r, strings.Join(names, ", "))
		}
	}
	return nil
}

// gates says whether a break of the lease contract, and of mutual
// exclusion, fails verify in s: the lease contract in any client-side
// scenario, mutual exclusion in one without pauses; findings otherwise,
// unless required.
func gates(s VerifyScenario, require []string) (lease, mutex bool) {
	named := slices.Contains(require, s.Name) || (s.Server && slices.Contains(require, "server"))
	lease = !s.Server || named
	mutex = (!s.Server && !s.Pauses) || named || (s.Pauses && slices.Contains(require, "fencing"))
	return lease, mutex
}

// verifyScenario runs s until its coverage is met, a guarantee breaks, or
// its share of the budget is spent, summing the coverage of its runs.
func verifyScenario(ctx context.Context, cfg VerifyConfig, s VerifyScenario, topo string, ownWatchdog bool, share time.Time, dir string, row *report.VerifyRow) error {
	began := time.Now()
	defer func() { row.Elapsed = time.Since(began).Round(time.Millisecond).String() }()
	row.Coverage = checker.Coverage{}
	for attempt := int64(0); ; attempt++ {
		rc := scenarioRun(cfg, s, topo, ownWatchdog, cfg.Seed+attempt, dir)
		res, err := Run(ctx, rc)
		row.Runs++
		row.Seeds = append(row.Seeds, rc.Workload.Seed)
		if err != nil {
			if res != nil && res.Dir != "" {
				err = fmt.Errorf("%s: %w (recorded in %s)", s.Name, err, res.Dir)
			}
			return err
		}
		row.Dir, _ = filepath.Rel(dir, res.Dir)
		if fault, ok := downFault(s.Scenario, topo); ok {
			ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
			if err != nil {
				return err
			}
			row.GrantedWhileDown += len(checker.GrantedWhileDown(ops, fault))
		}
		judgeRun(row, s, res)
		if row.Status != report.StatusNotExercised || time.Now().After(share) || ctx.Err() != nil {
			return nil
		}
	}
}

// scenarioRun is the run config of s's attempt with seed.
func scenarioRun(cfg VerifyConfig, s VerifyScenario, topo string, ownWatchdog bool, seed int64, dir string) Config {
	w := VerifyBase
	if s.Workload != nil {
		s.Workload(&w)
	}
	if s.RedlockClients > 0 && topo == cluster.Redlock {
		w.Clients = s.RedlockClients
	}
	if s.Extends && !ownWatchdog {
		w.ExtendEvery = w.TTL / 3
	}
	if cfg.Workload != nil {
		cfg.Workload(&w)
	}
	rc := cfg.Lock
	if cfg.ClientFaultLock != nil && s.Nemesis.ActsOnClients() {
		rc = *cfg.ClientFaultLock
	}
	return s.Scenario.run(rc, topo, w, seed, s.Name, filepath.Join(dir, "runs"), append(append([]string{}, cfg.Args...), "scenario="+s.Name))
}

// downFault is the fault of s that takes down every node a lock on topo
// has (kill-redis on a single node), if it has one.
func downFault(s Scenario, topo string) (string, bool) {
	if topo != cluster.Single || !slices.Contains(s.Nemesis.Faults, "kill-redis") {
		return "", false
	}
	return "kill-redis", true
}

// judgeRun folds one run of s into row: its guarantees, its coverage
// added to the runs' before, and the row's status.
func judgeRun(row *report.VerifyRow, s VerifyScenario, res *Result) {
	f := res.Findings
	verdict := func(names ...string) checker.Verdict {
		var vs []checker.Verdict
		for _, n := range names {
			c, _ := f.Checker(n)
			vs = append(vs, c.Verdict)
		}
		return checker.Compose(vs...)
	}
	row.Lease = worst(row.Lease, verdict(checker.Of(checker.LeaseContract)...))
	row.Mutex = worst(row.Mutex, verdict(checker.Of(checker.MutualExclusion)...))
	if row.Checkers == nil {
		row.Checkers = map[string]checker.Verdict{}
	}
	for _, c := range f.Checkers {
		row.Checkers[c.Name] = worst(row.Checkers[c.Name], c.Verdict)
	}
	for name, n := range f.Coverage {
		row.Coverage[name] += n
	}
	row.Short = report.ShortOf(row.Coverage, row.Requires)
	for _, t := range res.ThresholdsFailed() {
		if !slices.Contains(row.ThresholdsFailed, t.Threshold) {
			row.ThresholdsFailed = append(row.ThresholdsFailed, t.Threshold)
		}
	}
	row.Meaning = ""
	switch {
	case row.GrantedWhileDown > 0:
		row.Status = report.StatusBroken
		row.Meaning = fmt.Sprintf("the lock fails open: %d acquire(s) granted while its only Redis node was down (an error read as acquired)", row.GrantedWhileDown)
		return
	case (row.Lease == checker.Invalid && row.LeaseGated) || (row.Mutex == checker.Invalid && row.MutexGated):
		row.Status = report.StatusBroken
	case row.Lease == checker.Invalid || row.Mutex == checker.Invalid:
		row.Status = report.StatusFinding
	case row.Lease == checker.Unknown || row.Mutex == checker.Unknown:
		row.Status = report.StatusUnknown
	case len(row.Short) > 0:
		row.Status = report.StatusNotExercised
	default:
		row.Status = report.StatusPassed
	}
	switch row.Status {
	case report.StatusBroken:
		what := "the lease contract broke"
		if !(row.Lease == checker.Invalid && row.LeaseGated) {
			what = "mutual exclusion broke"
		}
		row.Meaning = what + ": " + firstViolation(f, row)
	case report.StatusFinding:
		row.Meaning = s.Breaks + ": " + firstViolation(f, row)
	}
}

// expectRow fails a scenario whose guarantees, where they count (not
// short of coverage, not unknown), differ from what expect says.
func expectRow(row *report.VerifyRow, expect map[string]checker.Verdict) {
	if row.Status != report.StatusPassed && row.Status != report.StatusFinding && row.Status != report.StatusBroken {
		return
	}
	for _, g := range []struct {
		name string
		got  checker.Verdict
	}{{"lease", row.Lease}, {"mutex", row.Mutex}} {
		if want, ok := expect[row.Scenario+" "+g.name]; ok && want != g.got {
			row.Status = report.StatusBroken
			row.Meaning = strings.TrimSuffix(fmt.Sprintf("--expect: %s %s, got %s; %s", g.name, want, g.got, row.Meaning), "; ")
		}
	}
}

// worst composes the verdicts of a scenario's runs ("" before the first).
func worst(a, b checker.Verdict) checker.Verdict {
	if a == "" {
		return b
	}
	return checker.Compose(a, b)
}

// firstViolation is the first violation of the checkers that broke,
// those of a gated guarantee first.
func firstViolation(f checker.Findings, row *report.VerifyRow) string {
	lease, mutex := checker.Of(checker.LeaseContract), checker.Of(checker.MutualExclusion)
	order := append(lease, mutex...)
	if !row.LeaseGated {
		order = append(mutex, lease...)
	}
	for _, n := range order {
		if c, _ := f.Checker(n); c.Verdict == checker.Invalid && len(c.Violations) > 0 {
			return n + ": " + c.Violations[0].Message
		}
	}
	return "see the run's report"
}

// verifyVerdict is the battery's verdict: invalid if a gated guarantee
// broke, unknown if a scenario was not exercised or not decided, valid
// otherwise.
func verifyVerdict(rows []report.VerifyRow) (checker.Verdict, []string, []string) {
	var broken, short []string
	for _, r := range rows {
		switch r.Status {
		case report.StatusBroken:
			broken = append(broken, r.Scenario)
		case report.StatusNotExercised, report.StatusUnknown:
			short = append(short, r.Scenario)
		}
	}
	switch {
	case len(broken) > 0:
		return checker.Invalid, broken, short
	case len(short) > 0:
		return checker.Unknown, broken, short
	}
	return checker.Valid, broken, short
}
