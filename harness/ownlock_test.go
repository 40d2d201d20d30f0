package harness_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/ownlock"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

func TestMain(m *testing.M) {
	// go-redis logs each dial a killed node refuses, thousands of lines a
	// run of fault tests; the history records what those ops did (the
	// CLI quiets it the same way).
	testutil.QuietRedis()
	code := m.Run()
	ownlock.Cleanup()
	os.Exit(code)
}

// TestOwnLock_SpecMatchesSetNX: the spec that reproduces setnx's scripts
// gives setnx's verdicts under the same seed, workload and faults.
func TestOwnLock_SpecMatchesSetNX(t *testing.T) {
	testutil.RequireRedis(t)
	for _, tc := range []struct {
		faults []string
		want   checker.Verdict
	}{{nil, checker.Valid}, {[]string{"pause-client"}, checker.Invalid}} {
		s := faultrun.Case{Workload: faultrun.ShortLeases, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: tc.faults, Interval: time.Second, Duration: time.Second}}}
		s.Workload.Duration = 5 * time.Second
		ok := false
		for seed := int64(1); seed <= 3 && !ok; seed++ {
			builtin, spec := s.Run(t, "setnx", seed), s.Run(t, "spec:setnx", seed)
			t.Logf("faults %v seed %d: setnx %s (%d double holders), spec %s (%d)", tc.faults, seed,
				builtin.Verdict, faultrun.DoubleHolders(builtin), spec.Verdict, faultrun.DoubleHolders(spec))
			ok = builtin.Verdict == tc.want && spec.Verdict == tc.want
		}
		if !ok {
			t.Errorf("faults %v: setnx and its spec did not both come out %s in 3 seeds", tc.faults, tc.want)
		}
	}
}

// TestOwnLock_BrokenSpecs: each broken variant, written as a spec, is
// invalid under a fault that exposes it, while the correct spec is valid
// under the same one.
func TestOwnLock_BrokenSpecs(t *testing.T) {
	testutil.RequireRedis(t)
	// An unconditional DEL release: late releases of the proof workload.
	res := run(t, "spec:broken-del-release", proofWorkload(7))
	if faultrun.DoubleHolders(res) == 0 {
		t.Errorf("spec:broken-del-release: no double holder (verdict %s)", res.Verdict)
	}
	// Extends without an ownership check: a holder frozen past its TTL
	// in its critical section, whose watchdog extends on waking.
	// Holds of 1s under a 200ms TTL: a paused holder wakes with most of
	// its hold ahead of it, so its watchdog's overdue extend goes out
	// before it releases.
	w := faultrun.ShortLeases
	w.Hold, w.HoldDist, w.ExtendEvery, w.Duration = time.Second, workload.HoldFixed, 60*time.Millisecond, 6*time.Second
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"pause-holder"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond}}}
	r := s.Expect(t, "spec:setnx", faultrun.Valid)
	if r.Summary.Paused == 0 {
		t.Error("no holder was paused")
	}
	// The violation is the extend's: one that took or kept someone
	// else's key. The checker names the first op no order explains: the
	// foreign extend itself, or, as on a loaded CI machine (all three
	// runs of one), the acquire that found a key a foreign SET XX had
	// kept alive past its lease ("two holders at once"); spec:setnx,
	// whose extend checks its token, is valid under the same fault.
	foreignExtend := func(r *harness.Result) (bool, string) {
		l, _ := r.Findings.Checker("linearizable")
		msg := ""
		if len(l.Violations) > 0 {
			msg = l.Violations[0].Message
		}
		named := strings.Contains(msg, "extended someone else's lease") || strings.Contains(msg, "two holders at once")
		return r.Verdict == checker.Invalid && named, "first linearizability violation: " + firstLine(msg)
	}
	s.Expect(t, "spec:broken-pexpire-extend", foreignExtend)
	s.Expect(t, "spec:broken-set-xx-extend", foreignExtend)
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// TestOwnLock_AddExtend: a correct additive extend keeps a crashed
// holder's key alive for the sum of its extensions. With mode "add" the
// model follows it; the same history read as replacing extends is a stuck
// lock.
func TestOwnLock_AddExtend(t *testing.T) {
	testutil.RequireRedis(t)
	w := faultrun.ShortLeases
	// 10 clients on 3 keys: an armed client acquires within its window
	// (with 50, a client acquired about once in 7 s, and runs under -race
	// went by with no crash at all).
	w.Clients, w.Hold, w.ExtendEvery, w.Duration, w.Retry = 10, 400*time.Millisecond, 60*time.Millisecond, 6*time.Second, workload.RetryNone
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"crash-client"}, Interval: time.Second, Duration: time.Second}}}
	s.Expect(t, "spec:add-extend", func(r *harness.Result) (bool, string) {
		if r.Verdict != checker.Valid || r.Summary.Crashed == 0 {
			return false, "crashed " + strconv.FormatInt(r.Summary.Crashed, 10)
		}
		f, err := os.Open(filepath.Join(r.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ops, err := history.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		adds := 0
		for i := range ops {
			if ops[i].Mode == history.ExtendAdd {
				ops[i].Mode = ""
				adds++
			}
		}
		// The only indeterminate ops here are a crashed client's, which
		// never left it: a short horizon keeps them from covering the
		// time the additive extends added.
		lin := checker.Linearizable(context.Background(), ops, checker.Options{ClockTolerance: 50 * time.Millisecond, InfoHorizon: time.Millisecond, Timeout: time.Minute}.Resolved())
		return adds > 0 && lin.Verdict == checker.Invalid, strconv.Itoa(adds) + " additive extends; read as replacing: " + string(lin.Verdict)
	})
}

// TestOwnLock_Process: the example lock process passes without faults and
// is invalid under pause-client, like setnx. Its processes start before
// the clients do (Result.Started, from which bench's window counts): no
// op is called before it.
func TestOwnLock_Process(t *testing.T) {
	testutil.RequireRedis(t)
	s := faultrun.Case{Workload: faultrun.ShortLeases}
	s.Workload.Duration = 5 * time.Second
	r := s.Expect(t, "cmd:lockproc", faultrun.Valid)
	if r.Ops < 500 {
		t.Errorf("only %d ops through the lock process", r.Ops)
	}
	ops, err := history.ReadFile(filepath.Join(r.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first := slices.MinFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	if r.Started <= 0 || time.Duration(first.Call) < r.Started {
		t.Errorf("clients started at %v, the first op called at %v: want a start after the processes' and no op before it", r.Started, time.Duration(first.Call))
	}
	s.Nemesis = nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second}
	s.Expect(t, "cmd:lockproc", func(r *harness.Result) (bool, string) {
		return faultrun.DoubleHolders(r) > 0, "double holders: " + strconv.Itoa(faultrun.DoubleHolders(r))
	})
}

// TestOwnLock_ProcessOnSentinel: examples/lockproc finds the master
// through the Sentinels, which name it at its peer proxy (replication
// 500 ms behind here); it dials where LOCKCHECK_DIAL_MAP says, and only
// there do replies come within the 400 ms op timeout. Dialing the proxy,
// it was cut off with the replicas at a partition, and verify's
// partition scenario never saw a split brain.
func TestOwnLock_ProcessOnSentinel(t *testing.T) {
	testutil.RequireRedis(t)
	w := faultrun.ShortLeases
	w.Duration, w.OpTimeout = 3*time.Second, 400*time.Millisecond
	r := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Topology: cluster.Sentinel, ReplicationLag: 500 * time.Millisecond}}.Run(t, "cmd:lockproc", 1)
	if ok := r.Summary.Ops.Get(history.Acquire, history.OK); r.Verdict != checker.Valid || ok < 50 {
		t.Errorf("%s, %d acquires granted; want valid, the master answering in time", r.Verdict, ok)
	}
}

// TestOwnLock_ProcessDies: a lock process that exits mid-run fails the run
// with a configuration error carrying its stderr; what was recorded is
// kept and checked.
func TestOwnLock_ProcessDies(t *testing.T) {
	testutil.RequireRedis(t)
	// Answers the start-up ping and five acquires (ok for the first,
	// taken for the rest), then dies.
	script := `i=0; while read line; do i=$((i+1)); id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
if [ $i -gt 6 ]; then echo "lost my redis connection" >&2; exit 7; fi
if [ $i -le 2 ]; then echo "{\"id\":$id,\"ok\":true,\"token\":\"t$id\"}"; else echo "{\"id\":$id,\"ok\":false}"; fi; done`
	// A minute to run: stopped at the death, it ends long before (the
	// run's end is the event, not a clock; a busy machine takes seconds).
	w := faultrun.ShortLeases
	w.Clients, w.Duration = 1, time.Minute
	out := t.TempDir()
	cfg := harness.Config{OutDir: out, Workload: w}
	ownlock.Process(&cfg, "dying", script, false)
	res, err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrConfig) || !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "lost my redis connection") ||
		!strings.Contains(err.Error(), "exit status 7") {
		t.Fatalf("got %v, want a config error with the exit status and stderr tail", err)
	}
	if res == nil || res.Findings.Verdict == "" || res.Elapsed >= w.Duration/2 {
		t.Fatalf("the run was not stopped at once and checked (it ran on toward its %v): %+v", w.Duration, res)
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, "history.jsonl")); err != nil || strings.Count(string(b), "\n") < 5 {
		t.Errorf("history not kept: %v, %d lines", err, strings.Count(string(b), "\n"))
	}
	testutil.NoRedisChildren(t)
}

// TestOwnLock_ProcessRefusesClientFaults: faults that act inside
// lockcheck's go-redis client are refused for a lock with a client of its
// own, by the harness itself (a Go caller gets the same answer as
// --lock-cmd), before anything starts; an in-process lock may have them.
// The faults on the client proxies (latency, lost-reply) act on the wire
// the lock's own client dials, and are not refused.
func TestOwnLock_ProcessRefusesClientFaults(t *testing.T) {
	testutil.RequireRedis(t)
	for _, fault := range []string{"crash-client"} {
		cfg := harness.Config{Nemesis: nemesis.Config{Faults: []string{fault}}}
		ownlock.Process(&cfg, "proc", "cat", false)
		err := harness.Validate(cfg)
		if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), "--nemesis "+fault+" acts inside lockcheck's own Redis client, which lock proc does not use") {
			t.Errorf("%s with a lock process: got %v, want a config error naming the fault", fault, err)
		}
		if err := harness.Validate(harness.Config{Lock: "setnx", Nemesis: cfg.Nemesis}); err != nil {
			t.Errorf("%s with setnx: %v, want no error", fault, err)
		}
	}
	cfg := harness.Config{Nemesis: nemesis.Config{Faults: []string{"pause-client", "kill-redis", "latency", "lost-reply"}}}
	ownlock.Process(&cfg, "proc", "cat", false)
	if err := harness.Validate(cfg); err != nil {
		t.Errorf("pause-client, kill-redis, latency and lost-reply with a lock process: %v, want no error", err)
	}
	// A process per client meets crash-client (the process is killed),
	// never the client proxies.
	cfg = harness.Config{Nemesis: nemesis.Config{Faults: []string{"crash-client"}}}
	ownlock.Process(&cfg, "proc", "cat", true)
	if err := harness.Validate(cfg); err != nil {
		t.Errorf("crash-client with a process per client: %v, want no error", err)
	}
	cfg.Nemesis.Faults = []string{"latency", "lost-reply"}
	if err := harness.Validate(cfg); err != nil {
		t.Errorf("latency and lost-reply with a process per client: %v, want no error", err)
	}
}

// TestOwnLock_LostReplyOnTheWire: lost-reply drops replies on the client
// proxy that a lock process's own Redis client dials, so the process
// meets it: examples/lockproc (no retries) is valid with indeterminate
// acquires (the fault reached it); with an acquire that is resent and
// takes its own token's key again (-reentrant, as go-zero's), valid with the scenario's chance counted on the wire (the
// replies of effect the proxy dropped: a key taken, not a refusal); with a plain SET NX resent (-resend,
// go-redis's default) it breaks the lease contract, within three seeds.
// The valid sides run seed after seed (three at most) until their windows
// gave the chance they are judged on.
func TestOwnLock_LostReplyOnTheWire(t *testing.T) {
	testutil.RequireRedis(t)
	bin := ownlock.Lockproc(t)
	run := func(cmdline string, seed int64) *harness.Result {
		cfg := harness.Config{OutDir: t.TempDir(), Nemesis: nemesis.Config{Faults: []string{"lost-reply"}, Interval: time.Second, Duration: time.Second, Seed: seed},
			Workload: workload.Config{Clients: 20, Keys: 3, Duration: 6 * time.Second, TTL: 200 * time.Millisecond, Hold: 100 * time.Millisecond,
				HoldDist: workload.HoldExp, Retry: workload.RetryBackoff, OpTimeout: 500 * time.Millisecond, Margin: 30 * time.Millisecond, Seed: seed},
			Check: checker.Options{ClockTolerance: 50 * time.Millisecond}}
		ownlock.Process(&cfg, "lockproc", cmdline, false)
		res, err := harness.Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", cmdline, err)
		}
		return res
	}
	// Each lock runs seed after seed (three at most) until its windows
	// gave the chance the assertion needs: a busy machine sends fewer
	// commands into a window, and loses fewer replies; every run must be
	// valid.
	chance := func(cmdline string, enough func(checker.Coverage) bool) checker.Coverage {
		total := checker.Coverage{}
		for seed := int64(1); seed <= 3 && !enough(total); seed++ {
			res := run(cmdline, seed)
			if res.Verdict != checker.Valid {
				t.Errorf("%s under lost-reply, seed %d: %s, want valid", cmdline, seed, res.Verdict)
			}
			total.Merge(res.Findings.Coverage)
		}
		return total
	}
	cov := chance(bin, func(c checker.Coverage) bool { return c[checker.WindowInfo] > 0 && c[history.LostReply] > 0 })
	if cov[checker.WindowInfo] == 0 || cov[history.LostReply] == 0 {
		t.Errorf("lockproc under lost-reply: %d indeterminate acquires in its windows and %d replies of effect lost on the wire; want some of each", cov[checker.WindowInfo], cov[history.LostReply])
	}
	// A correct lock that resends (its acquire takes its own token's key
	// again) ends few or no acquires indeterminate, and meets the
	// scenario's chance on the wire.
	need := checker.AnyOf(checker.InfoContended, history.LostReply)
	cov = chance(bin+" -reentrant", func(c checker.Coverage) bool { return c.Count(need) >= 10 })
	if cov.Count(need) < 10 {
		t.Errorf("lockproc -reentrant under lost-reply: %d replies lost on the wire (%d indeterminate acquires) in three runs; want at least 10", cov[history.LostReply], cov[checker.WindowInfo])
	}
	for seed := int64(1); ; seed++ {
		res := run(bin+" -resend", seed)
		if res.Verdict == checker.Invalid {
			break
		}
		if seed == 3 {
			t.Fatalf("lockproc -resend under lost-reply: %s at seeds 1 to 3, want invalid", res.Verdict)
		}
	}
	testutil.NoRedisChildren(t)
}

// TestOwnLock_Redislock: github.com/bsm/redislock, valid without faults,
// a double holder under pause-client.
func TestOwnLock_Redislock(t *testing.T) {
	testutil.RequireRedis(t)
	s := faultrun.Case{Workload: faultrun.ShortLeases}
	s.Workload.Duration, s.Workload.ExtendEvery = 5*time.Second, 60*time.Millisecond
	s.Expect(t, "redislock", faultrun.Valid)
	s.Nemesis = nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second}
	s.Expect(t, "redislock", func(r *harness.Result) (bool, string) {
		return faultrun.DoubleHolders(r) > 0, "double holders: " + strconv.Itoa(faultrun.DoubleHolders(r))
	})
}

// TestOwnLock_ProcessWatchdog: a lock process that extends its leases by
// itself reports each extend, so with no fault the history has them and
// the lock is valid. Under pause-client, one shared process keeps
// extending while the client is "paused", which hides the pause (no
// stale holder, no double holder); with a process per client the pause
// stops the process, watchdog and all, and the stale write shows.
func TestOwnLock_ProcessWatchdog(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 10, Keys: 3, TTL: 300 * time.Millisecond, Hold: 500 * time.Millisecond,
		Duration: 5 * time.Second, Margin: 30 * time.Millisecond}
	res := faultrun.Case{Workload: w}.Run(t, "cmd:lockproc-watchdog", 1)
	if res.Verdict != checker.Valid || res.Summary.Ops.Get(history.Extend, history.OK) == 0 {
		t.Errorf("no fault: verdict %s, %d extends ok; want valid, with the process's extends", res.Verdict, res.Summary.Ops.Get(history.Extend, history.OK))
	}
	w.Hold, w.Duration = 100*time.Millisecond, 6*time.Second
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond}}}
	shared := s.Run(t, "cmd:lockproc-watchdog", 1)
	if faultrun.DoubleHolders(shared) != 0 || shared.Findings.Coverage[checker.StaleHolder] != 0 || shared.Summary.Paused == 0 {
		t.Errorf("shared process: %d double holders, %d stale holders, %d pauses; want 0, 0 and some pauses",
			faultrun.DoubleHolders(shared), shared.Findings.Coverage[checker.StaleHolder], shared.Summary.Paused)
	}
	s.Expect(t, "cmd:lockproc-watchdog/per-client", func(r *harness.Result) (bool, string) {
		return faultrun.DoubleHolders(r) > 0 && r.Findings.Coverage[checker.StaleHolder] > 0,
			fmt.Sprintf("%d double holders, %d stale holders", faultrun.DoubleHolders(r), r.Findings.Coverage[checker.StaleHolder])
	})
}

// TestOwnLock_LocksOnCluster: every single-instance lock runs on the
// cluster topology and comes out valid, a broken one is still caught, and
// a lock spec whose keys fall into two slots is refused up front, naming
// them (examples/specs/fenced.toml puts its counter in the lock key's
// slot with a hash tag; the same spec without it is refused).
func TestOwnLock_LocksOnCluster(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 50, Keys: 10, Duration: 4 * time.Second, TTL: 500 * time.Millisecond, Hold: 50 * time.Millisecond, OpTimeout: time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Topology: cluster.RedisCluster}}
	for _, lock := range []string{"setnx", "watchdog", "fenced", "setnx-wait", "redislock", "spec:fenced"} {
		t.Run(lock, func(t *testing.T) {
			r := s.Expect(t, lock, faultrun.Valid)
			if r.Summary.Ops.Get(history.Write, history.OK) == 0 {
				t.Errorf("%s: no critical section on the cluster", lock)
			}
		})
	}
	t.Run("broken-del-release", func(t *testing.T) {
		p := faultrun.Case{Workload: proofWorkload(7), Scenario: s.Scenario}
		p.Expect(t, "broken-del-release", func(r *harness.Result) (bool, string) {
			return faultrun.DoubleHolders(r) > 0, "double holders: " + strconv.Itoa(faultrun.DoubleHolders(r))
		})
	})
	b, err := os.ReadFile("../examples/specs/fenced.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "two-slots.toml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "{{key}}:fence", "{key}:fence")), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := lockimpl.LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = harness.Run(context.Background(), harness.Config{OutDir: t.TempDir(), Lock: spec.Name, Factory: spec.Factory, Workload: w,
		Cluster: cluster.Config{Topology: s.Topology}})
	if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), `"{key}:fence"`) || !strings.Contains(err.Error(), "different cluster slots") {
		t.Errorf("a spec with keys in two slots: %v; want a configuration error naming the key and the slots", err)
	}
}

// TestOwnLock_RefusedBySpec: a spec whose release Redis refuses as
// written (WRONGTYPE: it reads the lock key as a hash) is not a lock whose
// releases are indeterminate, to be judged valid: the first refusal stops
// the run as a configuration error naming the reply, and what was
// recorded is kept and checked.
func TestOwnLock_RefusedBySpec(t *testing.T) {
	testutil.RequireRedis(t)
	src, err := os.ReadFile("../examples/specs/setnx.toml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
		`return redis.call("hdel", KEYS[1], ARGV[1])`, 1)
	if bad == string(src) {
		t.Fatal("the release script to replace is not in setnx.toml")
	}
	path := filepath.Join(t.TempDir(), "wrongtype.toml")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := lockimpl.LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	w := faultrun.ShortLeases
	w.Clients, w.Duration = 5, time.Minute // stopped at the refusal, long before
	cfg := harness.Config{Lock: s.Name, Factory: s.Factory, OutDir: t.TempDir(), Workload: w}
	res, err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrConfig) || !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("got %v, want a config error with the WRONGTYPE reply", err)
	}
	if res == nil || res.Findings.Verdict == "" || res.Elapsed >= w.Duration/2 {
		t.Fatalf("the run was not stopped at once and checked (it ran on toward its %v): %+v", w.Duration, res)
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, "history.jsonl")); err != nil || !strings.Contains(string(b), "WRONGTYPE") {
		t.Errorf("the refused release is not in the history (%v)", err)
	}
}

// TestRun_AbsurdClients: ten million clients are refused before anything
// starts, one line naming --clients, not grown until the machine kills
// the run; a lock spec that never ends (/dev/zero) is refused unread.
func TestRun_AbsurdClients(t *testing.T) {
	w := faultrun.ShortLeases
	w.Clients = 10_000_000
	_, err := harness.Run(context.Background(), harness.Config{Lock: "setnx", OutDir: t.TempDir(), Workload: w})
	if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), "--clients 10000000") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want one line refusing --clients (ErrConfig)", err)
	}
	if _, err := lockimpl.LoadSpec("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a lock spec") {
		t.Errorf("spec /dev/zero: got %v, want it refused as over-long", err)
	}
}
