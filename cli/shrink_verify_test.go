package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/shrink"
)

// verifyRunInfo is run.json of verify's run of scenario, as verify
// writes it (the command line, then scenario= and seed=).
func verifyRunInfo(verify []string, scenario string, seed int64, w report.RunWorkload, n report.RunNemesis) report.RunInfo {
	args := append(append([]string{"lockcheck", "verify"}, verify...), "scenario="+scenario, "seed="+strconv.FormatInt(seed, 10))
	return report.RunInfo{Lock: "broken-del-release", Topology: "single", Backend: "local", Args: args, Seed: seed,
		Workload: w, Nemesis: n, ClockTolerance: "50ms", InfoHorizon: "1.5s", CheckTimeout: "2m0s"}
}

// overrunWorkload is run.json's workload of verify's overrun scenario.
var overrunWorkload = report.RunWorkload{Clients: 200, Keys: 5, KeyDist: "uniform", Duration: "6s", TTL: "100ms", Hold: "100ms",
	HoldDist: "uniform", Retry: "none", Think: "0s", OpTimeout: "500ms", Margin: "30ms"}

// writeRun writes a run dir under root/runs/scenario: its run.json and
// a results.json whose mutex checker has verdict mutex.
func writeRun(t *testing.T, root, scenario string, info report.RunInfo, mutex string) string {
	t.Helper()
	dir := filepath.Join(root, "runs", scenario, "20261203T160633")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(info)
	res := `{"verdict":"` + mutex + `","checkers":[{"name":"stats","verdict":"valid"},{"name":"mutex","verdict":"` + mutex + `","violation_count":1,` +
		`"violations":[{"key":"lock:0","message":"double holder","ops":[1,2],"window":[1000,2000]}]}]}`
	if mutex == "valid" {
		res = `{"verdict":"valid","checkers":[{"name":"stats","verdict":"valid"},{"name":"mutex","verdict":"valid"}]}`
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestShrink_VerifyRunArgs: a verify scenario's run.json yields the
// lockcheck run command line of its lock flags and its recorded
// workload, faults, topology, check and seed (a --lock-cmd verify ran a
// client-fault scenario with a process per client, and says so); a
// verify dir whose runs did not break is one error line and exit 2; one
// with two broken scenarios gives the first in battery order.
func TestShrink_VerifyRunArgs(t *testing.T) {
	info := verifyRunInfo([]string{"--lock", "broken-del-release", "--scenario", "overrun", "--seed", "1", "--out", "/tmp/x", "-q", "--budget", "1m"},
		"overrun", 1, overrunWorkload, report.RunNemesis{})
	got, err := scenarioRunArgs(info)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lockcheck", "run", "--lock=broken-del-release", "--clients=200", "--keys=5", "--key-dist=uniform", "--duration=6s",
		"--ttl=100ms", "--hold=100ms", "--hold-dist=uniform", "--retry=none", "--think=0s", "--op-timeout=500ms", "--margin=30ms",
		"--topology=single", "--clock-tolerance=50ms", "--check-timeout=2m0s", "--seed=1"}
	if !slices.Equal(got, want) {
		t.Errorf("overrun's run args:\n got %q\nwant %q", got, want)
	}
	p, err := runPlan(got)
	if err != nil {
		t.Fatalf("runPlan of %q: %v", got, err)
	}
	if s := p.Size(); s.Clients != 200 || s.Keys != 5 || s.Windows != 0 || s.Duration.String() != "6s" {
		t.Errorf("plan of overrun's run: %v", s)
	}

	pause := verifyRunInfo([]string{"--lock-cmd", "python3 lock.py", "--name", "mine", "--lock-topology", "single", "--scenario=pause"},
		"pause", 7, report.RunWorkload{Clients: 20, Keys: 5, KeyDist: "uniform", Duration: "6s", TTL: "200ms", Hold: "100ms", HoldDist: "exp",
			Retry: "backoff:50ms,1s,5", Think: "0s", OpTimeout: "500ms", Margin: "30ms", ExtendEvery: "66ms", Permits: 3},
		report.RunNemesis{Faults: []string{"pause-client"}, Interval: "500ms", Duration: "500ms", RestartDelay: "0s", Persistence: "none", Targets: "one"})
	got, err = scenarioRunArgs(pause)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"lockcheck", "run", "--lock-cmd=python3 lock.py", "--name=mine", "--lock-cmd-per-client", "--clients=20", "--keys=5",
		"--key-dist=uniform", "--duration=6s", "--ttl=200ms", "--hold=100ms", "--hold-dist=exp", "--retry=backoff:50ms,1s,5", "--think=0s",
		"--op-timeout=500ms", "--margin=30ms", "--extend-every=66ms", "--permits=3", "--nemesis=pause-client", "--nemesis-interval=500ms",
		"--nemesis-duration=500ms", "--nemesis-targets=one", "--restart-delay=0s", "--topology=single", "--persistence=none",
		"--clock-tolerance=50ms", "--check-timeout=2m0s", "--seed=7"}
	if !slices.Equal(got, want) {
		t.Errorf("pause's run args:\n got %q\nwant %q", got, want)
	}

	// A verify dir none of whose runs broke: one line, exit 2.
	root := t.TempDir()
	writeRun(t, root, "overrun", info, "valid")
	code, err := shrinkCmd(context.Background(), []string{"--from", root})
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "none of the verify's 1 runs broke") || strings.Contains(err.Error(), "\n") {
		t.Errorf("shrink --from a verify dir that did not break: exit %d, %v; want %d and one line saying none broke", code, err, exitUsage)
	}

	// Two broken: the battery's first (overrun before pause), whichever
	// the dir lists first.
	root = t.TempDir()
	pauseInfo := verifyRunInfo([]string{"--lock", "broken-del-release"}, "pause", 3, overrunWorkload,
		report.RunNemesis{Faults: []string{"pause-client"}, Interval: "500ms", Duration: "500ms", RestartDelay: "0s", Persistence: "none", Targets: "one"})
	writeRun(t, root, "pause", pauseInfo, "invalid")
	overrun := writeRun(t, root, "overrun", info, "invalid")
	p, breaks, dir, err := shrinkSource(root)
	if err != nil || dir != overrun || len(breaks) == 0 || p.Seed != 1 || len(p.Windows) != 0 {
		t.Errorf("shrinkSource of a verify dir with two broken runs: dir %s, %d breaks, seed %d, %d windows, %v; want %s, its break, seed 1, no windows",
			dir, len(breaks), p.Seed, len(p.Windows), err, overrun)
	}
	// The scenario's run dir itself.
	if _, breaks, dir, err := shrinkSource(overrun); err != nil || dir != overrun || len(breaks) == 0 {
		t.Errorf("shrinkSource of a verify scenario's run: dir %s, %d breaks, %v", dir, len(breaks), err)
	}
}

// TestShrink_RedlockMasters: a redlock run names its masters in run.json
// (masters), and a shrink's runs have as many (--nodes).
func TestShrink_RedlockMasters(t *testing.T) {
	quorum := verifyRunInfo([]string{"--lock", "redlock"}, "kill-quorum", 2, overrunWorkload,
		report.RunNemesis{Faults: []string{"kill-quorum"}, Interval: "1s", Duration: "2s", RestartDelay: "0s", Persistence: "none"})
	quorum.Topology, quorum.Masters = "redlock", 7
	if got, err := scenarioRunArgs(quorum); err != nil || !slices.Contains(got, "--topology=redlock") || !slices.Contains(got, "--nodes=7") {
		t.Errorf("kill-quorum's run args on 7 masters: %q, %v; want --topology=redlock --nodes=7", got, err)
	}
}

// TestShrink_VerifyDir shrinks a real verify break: broken-del-release
// through verify's overrun scenario (200 clients, 5 keys, 6 s), shrunk
// from the verify dir itself, to a smaller plan that still breaks with
// the same finding. About 10 s of verify, then the shrink's budget of 2
// minutes at most (a minute on a quiet machine).
func TestShrink_VerifyDir(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	stdout, code := runBin(t, bin, "verify", "--lock", "broken-del-release", "--scenario", "overrun", "--seed", "1", "-q", "--out", out)
	if code != exitInvalid {
		t.Fatalf("verify: exit %d, want %d (invalid)\n%s", code, exitInvalid, stdout)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "verify", "2*"))
	if len(dirs) != 1 {
		t.Fatalf("verify dirs %v, want one", dirs)
	}
	shrunk := t.TempDir()
	stdout, code = runBin(t, bin, "shrink", "--from", dirs[0], "--budget", "2m", "--runs", "3", "--measure", "5", "--out", shrunk)
	if code != exitValid {
		t.Fatalf("shrink: exit %d\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "shrink: taking the verify's run that broke, "+filepath.Join(dirs[0], "runs", "overrun")) {
		t.Errorf("shrink does not say it took overrun's run:\n%s", stdout)
	}
	if !strings.Contains(stdout, "shrink: baseline: the original broke") {
		t.Errorf("no baseline line:\n%s", stdout)
	}
	var p shrink.Plan
	pb, err := os.ReadFile(filepath.Join(shrunk, "plan.json"))
	if err == nil {
		err = json.Unmarshal(pb, &p)
	}
	if err != nil {
		t.Fatalf("plan.json: %v\n%s", err, stdout)
	}
	if p.Shrunk == nil || p.Shrunk.Reproduced < 1 || p.Shrunk.Finding.Checker == "" {
		t.Fatalf("plan's account %+v: want its finding and at least one of its measured runs broken", p.Shrunk)
	}
	if len(p.Args) < 2 || p.Args[1] != "run" {
		t.Errorf("the plan's command %q is not a lockcheck run", p.Args)
	}
	t.Logf("shrunk %s -> %v, reproduced %d of %d", p.Shrunk.From, p.Size(), p.Shrunk.Reproduced, p.Shrunk.Measured)
	if s := p.Size(); s.Clients >= 200 || s.Keys > 5 || s.Duration > 6e9 || (s.Clients > 20 && s.Keys == 5) {
		t.Errorf("shrunk to %v, want well under 200 clients, 5 keys, 6s\n%s", s, stdout)
	}
	if left := testutil.RedisChildren(); len(left) > 0 {
		t.Errorf("redis-server %v left after the shrink", left)
	}
}

// TestVerify_Shrink: verify --shrink shrinks each break it found, after
// the battery, into the broken run's own dir: broken-del-release through
// overrun, with a minute's budget, leaves a plan of a lockcheck run
// beside that run, keeping overrun's finding, and verify still exits with
// the battery's verdict. A
// budget below 0, or --shrink with --agents, is one line, exit 2.
func TestVerify_Shrink(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	if stdout, code := runBin(t, bin, "verify", "--lock", "broken-del-release", "--scenario", "overrun", "--shrink", "-1s", "--out", out); code != exitUsage || strings.Count(strings.TrimSpace(stdout), "\n") > 0 || !strings.Contains(stdout, "--shrink") {
		t.Errorf("verify --shrink -1s: exit %d, %q; want %d and one line naming --shrink", code, stdout, exitUsage)
	}
	if stdout, code := runBin(t, bin, "verify", "--lock", "setnx", "--shrink", "1m", "--agents", "2", "--out", out); code != exitUsage || strings.Count(strings.TrimSpace(stdout), "\n") > 0 || !strings.Contains(stdout, "--agents") {
		t.Errorf("verify --shrink 1m --agents 2: exit %d, %q; want %d and one line naming --agents", code, stdout, exitUsage)
	}
	stdout, code := runBin(t, bin, "verify", "--lock", "broken-del-release", "--scenario", "overrun", "--seed", "1", "-q", "--shrink", "1m", "--out", out)
	if code != exitInvalid {
		t.Fatalf("verify --shrink: exit %d, want %d (the battery's: invalid)\n%s", code, exitInvalid, stdout)
	}
	plans, _ := filepath.Glob(filepath.Join(out, "verify", "2*", "runs", "overrun", "2*", "shrink", "plan.json"))
	if len(plans) != 1 || !strings.Contains(stdout, "shrink overrun (--from ") || !strings.Contains(stdout, "replay: lockcheck run --plan "+plans[0]) {
		t.Fatalf("verify --shrink: plans %v; want one beside overrun's broken run, and its replay line\n%s", plans, stdout)
	}
	p, err := shrink.Load(plans[0])
	if err != nil || len(p.Args) < 2 || p.Args[1] != "run" {
		t.Fatalf("the plan %s: %v, command %q; want a lockcheck run", plans[0], err, p.Args)
	}
	// How far a minute shrinks it depends on the machine's speed
	// (TestShrink_VerifyDir judges that); the plan keeps the finding.
	if p.Shrunk == nil || p.Shrunk.Finding.Checker == "" || p.Size().Clients > 200 {
		t.Errorf("the plan's account %+v, size %v: want overrun's finding, at most its 200 clients\n%s", p.Shrunk, p.Size(), stdout)
	}
}
