package battery

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

	"github.com/lockcheck/lockcheck/scenario"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// DefaultVerifyBudget bounds a whole battery's time: a scenario short of
// its coverage runs again while its share of the budget lasts.
const DefaultVerifyBudget = 5 * time.Minute

// VerifyConfig is one lockcheck verify.
type VerifyConfig struct {
	// Lock is the lock under test, as in a run: Lock (in Registry) or
	// Factory, LockVersion, and Cluster's backend and programs. Its
	// Workload, Nemesis, Name and OutDir are the battery's.
	Lock harness.Config
	// ClientFaultLock, if set, is the lock of the scenarios whose faults
	// pause or crash clients or move the master (a --lock-cmd with one
	// process per client: a pause stops the process, and each client has
	// a Redis client of its own, as in production, that follows a new
	// master when it hears of it).
	ClientFaultLock *harness.Config
	// Watchdog: the lock keeps its leases alive on its own (set for a
	// Factory; a registered lock says so in its Entry).
	Watchdog bool
	// NoExtend: the lock has no extend (Laravel's cache lock): the
	// scenarios that extend leases are n/a, unless it renews them itself.
	NoExtend bool
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
	dir, err := harness.NewRunDir(cmp.Or(cfg.OutDir, "results"), "verify")
	if err != nil {
		return nil, "", err
	}
	v := &report.Verify{Lock: e.Name, Budget: cfg.Budget.String(), Seed: cfg.Seed, Require: cfg.Require, Args: cfg.Args}
	start := time.Now()
	broke, p := false, verifyProfile(cfg, e)
	topos := make([]string, len(scen))
	for i, s := range scen {
		row := report.VerifyRow{Scenario: s.Name, Description: s.Description, Server: s.Server, Requires: s.Requires}
		row.LeaseGated, row.MutexGated = s.Gates(cfg.Require)
		topo, na, req := s.Fits(p)
		topos[i], row.NA, row.Requires = topo, na, req
		switch {
		case row.NA != "":
			row.Status = report.StatusNA
		case (broke && !cfg.KeepGoing) || ctx.Err() != nil:
			row.Status = report.StatusNotRun
		default:
			share := start.Add(cfg.Budget * time.Duration(i+1) / time.Duration(len(scen)))
			if err := verifyScenario(ctx, cfg, s, topo, &p, share, dir, &row); err != nil {
				// What ran is kept and written; the battery stops.
				row.Status, row.Meaning = report.StatusUnknown, err.Error()
				v.Rows = append(v.Rows, row)
				return v, dir, errors.Join(err, finishVerify(v, start, dir))
			}
			expectRow(&row, cfg.Expect)
			broke = broke || row.Status == report.StatusBroken
			// A run that says the lock's leases are scopes tells the
			// profile, for the scenarios after.
			p.Scope = cmp.Or(p.Scope, row.NotJudged[checker.LeaseContract])
		}
		// One line as each scenario ends; the summary has the rest.
		report.TextVerifyProgress(cfg.Progress, row)
		v.Rows = append(v.Rows, row)
	}
	if err := spendLeft(ctx, cfg, scen, topos, &p, start, dir, v, broke); err != nil {
		return v, dir, errors.Join(err, finishVerify(v, start, dir))
	}
	return v, dir, finishVerify(v, start, dir)
}

// spendLeft spends the budget that the scenarios' shares left (those
// exercised in their first runs leave most of theirs) where coverage is
// still missing: each scenario not exercised runs again, from its next
// seed, in turn, the time left shared among them. A row it reruns is
// judged over all its runs.
func spendLeft(ctx context.Context, cfg VerifyConfig, scen []scenario.Scenario, topos []string, p *scenario.Profile, start time.Time, dir string, v *report.Verify, broke bool) error {
	var short []int
	for i := range v.Rows {
		if v.Rows[i].Status == report.StatusNotExercised {
			short = append(short, i)
		}
	}
	from, end := time.Now(), start.Add(cfg.Budget)
	for k, i := range short {
		share := from.Add(end.Sub(from) * time.Duration(k+1) / time.Duration(len(short)))
		if (broke && !cfg.KeepGoing) || ctx.Err() != nil || !time.Now().Before(share) {
			continue
		}
		row := &v.Rows[i]
		if err := verifyScenario(ctx, cfg, scen[i], topos[i], p, share, dir, row); err != nil {
			row.Status, row.Meaning = report.StatusUnknown, err.Error()
			return err
		}
		expectRow(row, cfg.Expect)
		broke = broke || row.Status == report.StatusBroken
		report.TextVerifyProgress(cfg.Progress, *row)
	}
	return nil
}

// verifyProfile is the profile of lock e as cfg declares it: its own
// renewals (a Factory's --lock-watchdog), no extend, a process per
// client where cfg has one for the client faults, its shape and
// permits as cfg's workload asks.
func verifyProfile(cfg VerifyConfig, e lockimpl.Entry) scenario.Profile {
	p := scenario.ProfileOf(e, cfg.Lock.Cluster)
	p.PerClient = p.PerClient || cfg.ClientFaultLock != nil
	p.Renews = p.Renews || cfg.Watchdog
	p.NoExtend = cfg.NoExtend
	if cfg.Workload != nil {
		var w workload.Config
		cfg.Workload(&w)
		p.Permits = max(w.Permits, 1)
		if p.Permits > 1 {
			p.Shape = scenario.Semaphore
		}
		if w.Readers > 0 {
			p.Shape = scenario.ReadWrite
		}
		if w.Reenter > 0 {
			p.Shape = scenario.Reentrant
		}
		p.Blocking = w.Wait > 0
	}
	return p
}

// finishVerify sets the battery's verdict and writes its files.
func finishVerify(v *report.Verify, start time.Time, dir string) error {
	v.Elapsed = time.Since(start).Round(time.Millisecond).String()
	v.Verdict, v.Broken, v.Short = verifyVerdict(v.Rows)
	_ = harness.UpdateLatest(filepath.Dir(dir), dir)
	return report.WriteVerify(dir, *v)
}

// ValidateVerify says what is wrong with cfg, if anything, before
// anything starts.
func ValidateVerify(cfg VerifyConfig) error {
	_, _, err := verifyPlan(cfg)
	return err
}

// verifyPlan checks cfg and returns its scenarios and lock.
func verifyPlan(cfg VerifyConfig) ([]scenario.Scenario, lockimpl.Entry, error) {
	scen, err := scenario.Pick(scenario.Battery(), cfg.Scenarios)
	if err != nil {
		return nil, lockimpl.Entry{}, workload.ConfigErr(err)
	}
	e, err := cfg.Lock.Entry()
	if err != nil {
		return nil, e, workload.ConfigErr(err)
	}
	if err := checkRequire(cfg.Require); err != nil {
		return nil, e, workload.ConfigErr(err)
	}
	// Every TTL a scenario will use must suit the lock.
	p := verifyProfile(cfg, e)
	p.PerClient = true
	for _, s := range scen {
		topo, na := s.TopologyFor(p)
		if na != "" {
			continue
		}
		if err := e.FitsTTL(verifyRun(cfg, s, topo, p, 0, "").Workload.TTL); err != nil {
			return nil, e, workload.ConfigErr(fmt.Errorf("scenario %s: %w", s.Name, err))
		}
	}
	if cfg.Lock.Cluster.Backend == cluster.External {
		// The lock must fit the Redis given before any scenario runs.
		if err := harness.Validate(cfg.Lock); err != nil {
			return nil, e, err
		}
	}
	for k := range cfg.Expect {
		name, g, _ := strings.Cut(k, " ")
		if _, err := scenario.Pick(scenario.Battery(), []string{name}); err != nil || (g != "lease" && g != "mutex") {
			return nil, e, workload.ConfigErr(fmt.Errorf("--expect %q: want a scenario (%s) and lease or mutex", k, strings.Join(scenario.Names(scenario.Battery()), ", ")))
		}
	}
	if cfg.Budget < 0 {
		return nil, e, workload.ConfigErr(fmt.Errorf("--budget %v: want more than 0", cfg.Budget))
	}
	return scen, e, nil
}

// checkRequire refuses a --require that names nothing.
func checkRequire(req []string) error {
	names := scenario.Names(scenario.Battery())
	for _, r := range req {
		if r != "fencing" && r != "server" && !slices.Contains(names, r) {
			return fmt.Errorf("--require %q: want fencing, server or a scenario (%s)", r, strings.Join(names, ", "))
		}
	}
	return nil
}

// verifyScenario runs s until its coverage is met, a guarantee breaks, or
// its share of the budget is spent, summing the coverage of its runs.
// p is the lock's profile, told the own timeout each run declares.
func verifyScenario(ctx context.Context, cfg VerifyConfig, s scenario.Scenario, topo string, p *scenario.Profile, share time.Time, dir string, row *report.VerifyRow) error {
	// A row run again (spendLeft) goes on from its next seed, its
	// coverage and time added to its first runs'.
	before, _ := time.ParseDuration(row.Elapsed)
	began := time.Now().Add(-before)
	defer func() { row.Elapsed = time.Since(began).Round(time.Millisecond).String() }()
	if row.Coverage == nil {
		row.Coverage = checker.Coverage{}
	}
	s = s.Scaled(row.Scale)
	for attempt := int64(row.Runs); ; attempt++ {
		rc := verifyRun(cfg, s, topo, *p, cfg.Seed+attempt, dir)
		res, err := harness.Run(ctx, rc)
		row.Runs++
		row.Seeds = append(row.Seeds, rc.Workload.Seed)
		if errors.Is(err, history.ErrEmpty) && ctx.Err() == nil {
			// A run that recorded nothing judges nothing: the battery
			// goes on, and the scenario tries its next seed.
			emptyRun(row, res, dir)
			if time.Now().After(share) {
				return nil
			}
			continue
		}
		if err != nil {
			if res != nil && res.Dir != "" {
				err = fmt.Errorf("%s: %w (recorded in %s)", s.Name, err, res.Dir)
			}
			return err
		}
		row.Dir, _ = filepath.Rel(dir, res.Dir)
		if fault, ok := s.DownFault(topo); ok {
			ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
			if err != nil {
				return err
			}
			row.GrantedWhileDown += len(checker.GrantedWhileDown(ops, fault))
		}
		judgeRun(row, s, res)
		if time.Now().After(share) || ctx.Err() != nil {
			return nil
		}
		p.OwnTimeout = res.OwnTimeout
		if st, ok := stretchStall(s, *p, row); ok {
			s = st
			continue
		}
		if row.Status != report.StatusNotExercised {
			return nil
		}
		if row.Scale == 0 {
			if s, err = sizeToLock(s, p, rc.Workload.TTL, res.Dir, row); err != nil {
				return err
			}
		}
	}
}

// stretchStall is s with its stalls outlasting the lock's own command
// timeout (Scenario.StallFor), with row saying so, where s asks for it
// and row has not yet its coverage. ok is false where s is kept.
func stretchStall(s scenario.Scenario, p scenario.Profile, row *report.VerifyRow) (scenario.Scenario, bool) {
	if row.Status != report.StatusNotExercised && row.Status != report.StatusNA {
		return s, false
	}
	st, d, ok := s.StallFor(p)
	if !ok {
		return s, false
	}
	row.Description += fmt.Sprintf(" (its stalls sized to the lock: its client waits %v for a reply, so each stall lasts %v)", p.OwnTimeout, d)
	row.Status, row.NA = report.StatusNotExercised, ""
	return st, true
}

// sizeToLock is s sized to the lock (Scenario.ScaleTo, Scaled) from its
// run in dir, with row saying so, and p told how long the lock's keys
// lived there: s as it is where the run shows keys of the TTL asked and,
// for the scenarios of late releases, acquires fast enough. It is asked
// once a row, after a run short of coverage.
func sizeToLock(s scenario.Scenario, p *scenario.Profile, ttl time.Duration, dir string, row *report.VerifyRow) (scenario.Scenario, error) {
	row.Scale = 1
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return s, err
	}
	var key time.Duration
	var took []time.Duration
	for _, op := range ops {
		if op.F == history.Acquire && op.Type == history.OK && op.TTLms > 0 {
			key = cmp.Or(key, time.Duration(op.TTLms)*time.Millisecond)
			took = append(took, time.Duration(op.Return-op.Call))
		}
	}
	if len(took) == 0 {
		return s, nil
	}
	p.KeyTTL, p.AskedTTL = key, ttl
	slices.Sort(took)
	p50 := took[len(took)/2]
	f, byKey := s.ScaleTo(ttl, key, p50)
	switch {
	case f <= 1:
		return s, nil
	case byKey:
		row.Description += fmt.Sprintf(" (sized to the lock: its keys live %v where %v was asked, so its times ×%d)", key, ttl, f)
	default:
		row.Description += fmt.Sprintf(" (sized to the lock: its acquires took %v (median) where %v was asked, so its times ×%d)", p50.Round(time.Millisecond), ttl, f)
	}
	row.Scale = f
	return s.Scaled(f), nil
}

// emptyRun folds into row a run that recorded no op (res may be nil):
// unknown, with why and what to look at, while no run of the scenario
// has been judged; a row already judged (short of coverage) keeps its
// status.
func emptyRun(row *report.VerifyRow, res *harness.Result, dir string) {
	row.EmptyRuns++
	if res != nil && res.Dir != "" {
		row.Dir, _ = filepath.Rel(dir, res.Dir)
	}
	if row.Status != "" && row.Status != report.StatusUnknown {
		return
	}
	row.Status = report.StatusUnknown
	row.Meaning = fmt.Sprintf("%d run(s) recorded no op: no client's call returned or was cut off in the run, so there is nothing to judge; see the lock's stderr and run.json in %s, and try the scenario alone with lockcheck verify --scenario %s", row.EmptyRuns, cmp.Or(row.Dir, "its run dir"), row.Scenario)
}

// judgeRun folds one run of s into row: its guarantees, its coverage
// added to the runs' before, and the row's status.
func judgeRun(row *report.VerifyRow, s scenario.Scenario, res *harness.Result) {
	f := res.Findings
	verdict := func(names ...string) checker.Verdict {
		var vs []checker.Verdict
		for _, n := range names {
			c, _ := f.Checker(n)
			vs = append(vs, c.Verdict)
		}
		return checker.Compose(vs...)
	}
	for g, judged := range map[checker.Guarantee]*checker.Verdict{checker.LeaseContract: &row.Lease, checker.MutualExclusion: &row.Mutex} {
		if why, left := f.NotJudged[g]; left {
			if row.NotJudged == nil {
				row.NotJudged = map[checker.Guarantee]string{}
			}
			row.NotJudged[g] = why
			continue
		}
		*judged = worst(*judged, verdict(checker.Of(g)...))
	}
	if row.Checkers == nil {
		row.Checkers = map[string]checker.Verdict{}
	}
	for _, c := range f.Checkers {
		row.Checkers[c.Name] = worst(row.Checkers[c.Name], c.Verdict)
	}
	row.Coverage.Merge(f.Coverage)
	row.Short = report.ShortOf(row.Coverage, row.Requires)
	row.Acquires += res.Summary.Ops.Get(history.Acquire, "")
	row.InfoAcquires += res.Summary.Ops.Get(history.Acquire, history.Info)
	for _, t := range res.ThresholdsFailed() {
		if !slices.Contains(row.ThresholdsFailed, t.Threshold) {
			row.ThresholdsFailed = append(row.ThresholdsFailed, t.Threshold)
		}
	}
	row.Meaning = ""
	if row.GrantedWhileDown > 0 {
		row.Status = report.StatusBroken
		row.Meaning = fmt.Sprintf("the lock fails open: %d acquire(s) granted while its only Redis node was down (an error read as acquired)", row.GrantedWhileDown)
		return
	}
	row.Status, row.NA = statusOf(row, s)
	switch row.Status {
	case report.StatusBroken:
		what := "the lease contract broke"
		if !(row.Lease == checker.Invalid && row.LeaseGated) {
			what = "mutual exclusion broke"
		}
		row.Meaning = what + ": " + firstViolation(f, row)
	case report.StatusFinding:
		row.Meaning = s.Breaks + ": " + firstViolation(f, row)
	case report.StatusNotExercised:
		row.Meaning = mostlyInfo(row)
	}
}

// minAcquiresForWhy is how many acquires a scenario's runs must have
// recorded before mostlyInfo reads their share of indeterminate ones.
const minAcquiresForWhy = 20

// mostlyInfo is why a scenario not exercised had no chance, where most of
// its acquires ended indeterminate ("" otherwise): the lock's client gave
// up on Redis before it answered (redsync gives each node the TTL x 0.05,
// 50 ms of a 1 s lease), so few acquires were refused or granted, and a
// grant it gave up on holds its key for the TTL.
func mostlyInfo(row *report.VerifyRow) string {
	if row.Acquires < minAcquiresForWhy || 2*row.InfoAcquires <= row.Acquires {
		return ""
	}
	return fmt.Sprintf("%d of %d acquires ended indeterminate in %d run(s): the lock's client gave up on Redis before it answered (a machine too busy for the lock's own timeouts, or timeouts too short for them), so few got an answer; more budget will not help: fewer --clients, or a longer --ttl where the lock's timeouts are a fraction of it",
		row.InfoAcquires, row.Acquires, row.Runs)
}

// statusOf is row's status from its verdicts and coverage, and why it
// is n/a if it is.
func statusOf(row *report.VerifyRow, s scenario.Scenario) (status, na string) {
	switch {
	case (row.Lease == checker.Invalid && row.LeaseGated) || (row.Mutex == checker.Invalid && row.MutexGated):
		return report.StatusBroken, ""
	case row.Lease == checker.Invalid || row.Mutex == checker.Invalid:
		return report.StatusFinding, ""
	case row.Lease == checker.Unknown || row.Mutex == checker.Unknown:
		return report.StatusUnknown, ""
	case len(row.Short) == 0:
		return report.StatusPassed, ""
	}
	if why := s.WaitsOut(row.Requires, row.Coverage, row.Runs); why != "" {
		return report.StatusNA, why
	}
	return report.StatusNotExercised, ""
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
