package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
)

// lockcheck builds the binary once per test run.
func lockcheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/lockcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func runBin(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestCLI_UsageErrors(t *testing.T) {
	bin := lockcheck(t)
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "history.jsonl")
	good := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","token":"a","ttl_ms":5,"call":1,"return":2}`
	if err := os.WriteFile(corrupt, []byte(good+"\n{\"index\":1,\"process\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Histories that break one rule of the strict reader each.
	history := func(name, line string) string {
		p := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := func(name, old, new string) string { return history(name, strings.Replace(good, old, new, 1)+"\n") }
	spec, err := os.ReadFile("../examples/specs/setnx.toml")
	if err != nil {
		t.Fatal(err)
	}
	badSpec := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badSpec, []byte(strings.Replace(string(spec), `args = ["{token}"]`, `args = ["{tokn}"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	expect := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"verify: bad expect line", []string{"verify", "--expect", expect("e1", "pause mutex\n")}, `e1:1: want "SCENARIO lease|mutex valid|invalid"`},
		{"verify: expect names nothing", []string{"verify", "--expect", expect("e2", "meteor lease valid\n")}, `--expect "meteor lease": want a scenario`},
		{"corrupt history", []string{"check", corrupt}, "history.jsonl line 2: not a history op"},
		{"lock process exits", []string{"run", "--lock-cmd", "true", "--duration", "2s", "-q", "--out", dir}, `lock process "true" exited`},
		{"missing path", []string{"check", filepath.Join(dir, "nope")}, "no such run dir or history file"},
		{"unknown flag", []string{"run", "--clientz", "5"}, "unknown flag: --clientz"},
		{"unknown lock", []string{"run", "--lock", "nope"}, `unknown lock "nope"`},
		{"bad hold-dist", []string{"run", "--hold-dist", "normal"}, `--hold-dist "normal": want fixed, exp or uniform`},
		{"no redis-server", []string{"run", "--redis-server", "/nonexistent/redis-server"}, "install it with"},
		{"bad spec", []string{"run", "--lock-spec", badSpec}, "bad.toml:20: unknown placeholder {tokn} in [release] args"},
		{"missing spec", []string{"run", "--lock-spec", filepath.Join(dir, "none.toml")}, "none.toml: no such file"},
		{"two locks", []string{"run", "--lock", "setnx", "--lock-spec", badSpec}, "give one of --lock, --lock-spec and --lock-cmd"},
		{"crash-client with lock-cmd", []string{"run", "--lock-cmd", "cat", "--nemesis", "crash-client"}, "--nemesis crash-client acts inside lockcheck's own Redis client"},
		{"extend-every too long", []string{"run", "--extend-every", "2s", "--ttl", "1s"}, "--extend-every 2s: want more than 0 and less than the TTL"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"shrink without --from", []string{"shrink"}, "shrink needs --from: a broken run's dir"},
		{"shrink from nothing", []string{"shrink", "--from", filepath.Join(dir, "none")}, "none: no such file or directory"},
		{"shrink from no run", []string{"shrink", "--from", dir}, "is not a lockcheck run"},
		{"plan missing", []string{"run", "--plan", filepath.Join(dir, "none.json")}, "none.json: no such file or directory"},
		{"plan not a plan", []string{"run", "--plan", corrupt}, "history.jsonl: invalid character"},
		// The strict reader: each a line number and exit 2, never a verdict.
		{"empty history", []string{"check", history("empty", "")}, "history has no ops"},
		{"no call", []string{"check", bad("nocall", `"call":1,`, "")}, `line 1: missing field "call"`},
		{"no return", []string{"check", bad("noreturn", `,"return":2`, "")}, `line 1: missing field "return"`},
		{"negative time", []string{"check", bad("negative", `"call":1`, `"call":-1`)}, "line 1: call -1, return 2: want 0 <= call <= return"},
		{"no token", []string{"check", bad("notoken", `"token":"a",`, "")}, "line 1: acquire ok op has no token"},
		{"not utf-8", []string{"check", bad("latin1", `"k"`, "\"k\xe9\"")}, "line 1: not UTF-8"},
		{"duplicate field", []string{"check", bad("dup", `"call":1`, `"call":1,"call":1`)}, "line 1: not a history op"},
		{"upper-case field", []string{"check", bad("upper", `"token"`, `"Token"`)}, "line 1: not a history op"},
		{"time too large", []string{"check", bad("huge", `"return":2`, `"return":9223372036854775000`)}, "line 1: call 1, return 9223372036854775000"},
		// Flags: checked before anything starts.
		{"negative horizon", []string{"run", "--info-horizon", "-1s"}, "--info-horizon -1s: want 0 or more"},
		{"negative tolerance", []string{"check", "--clock-tolerance", "-1ms", corrupt}, "--clock-tolerance -1ms: want 0 or more"},
		{"unparsable horizon", []string{"check", "--info-horizon", "soon", corrupt}, `invalid argument "soon" for "--info-horizon"`},
		{"zero clients", []string{"run", "--clients", "0"}, "--clients 0: want at least 1"},
		{"zero keys", []string{"run", "--keys", "0"}, "--keys 0: want at least 1"},
		{"zero ttl", []string{"run", "--ttl", "0"}, "--ttl 0s: want at least 1ms"},
		{"unknown retry policy", []string{"run", "--retry", "sometimes"}, `--retry "sometimes": unknown kind "sometimes"`},
		{"retry cap below base", []string{"run", "--retry", "backoff:1s,10ms"}, `--retry "backoff:1s,10ms": the cap is below the base`},
		{"unknown retry jitter", []string{"run", "--retry-jitter", "half"}, `--retry-jitter "half": want full, equal or none`},
		{"bench: bad retry in a sweep", []string{"bench", "--retry", "none", "--retry", "fixed:0s"}, `--retry "fixed:0s": "0s" is not a positive duration`},
		{"bench: cpuprofile unwritable", []string{"bench", "--cpuprofile", "/nonexistent/x.prof"}, "--cpuprofile: open /nonexistent/x.prof: no such file or directory"},
		{"bad rate", []string{"run", "--rate", "fast"}, `invalid argument "fast" for "--rate" flag: want a positive rate such as 500/s or 3000/m`},
		{"rate unit", []string{"run", "--rate", "5/h"}, `unit "h": want /s or /m`},
		{"skip-release over 1", []string{"run", "--skip-release", "1.5"}, "--skip-release 1.5: want a fraction from 0 to 1"},
		{"negative ttl-factor", []string{"run", "--ttl-factor", "-2"}, "--ttl-factor -2: want more than 0"},
		{"bench zero clients", []string{"bench", "--clients", "50,0"}, "--clients 0: want at least 1"},
		{"bench rounds without a baseline", []string{"bench", "--rounds", "3"}, "--rounds 3: give 1 or more, and more than 1 only with --baseline"},
		{"bench zero rounds", []string{"bench", "--baseline", "--rounds", "0"}, "--rounds 0: give 1 or more"},
		{"unknown topology", []string{"run", "--topology", "ring"}, `--topology "ring" is not supported`},
		{"unknown backend", []string{"run", "--backend", "k8s"}, `--backend "k8s" is not supported`},
		{"fault needs sentinel", []string{"run", "--nemesis", "failover"}, "--nemesis failover needs --topology sentinel or cluster (this run: single)"},
		{"redis-conf without a value", []string{"run", "--redis-conf", "appendonly"}, `--redis-conf "appendonly": want "name value"`},
		{"unknown nemesis targets", []string{"run", "--nemesis", "kill-redis", "--nemesis-targets", "half"}, `--nemesis-targets "half": want one of one, minority, majority, primaries, all`},
		{"a+b names a fault twice", []string{"run", "--nemesis", "kill-redis+kill-redis"}, `names kill-redis twice`},
		{"reshard needs cluster", []string{"run", "--nemesis", "reshard"}, "--nemesis reshard needs --topology cluster (this run: single)"},
		{"cluster has 3 masters or more", []string{"run", "--topology", "cluster", "--nodes", "2"}, "--nodes 2: want 3 to 15 masters"},
		{"verify: unknown scenario", []string{"verify", "--scenario", "meteor"}, `unknown scenario "meteor" (known: contention,`},
		{"verify: unknown require", []string{"verify", "--require", "luck"}, `--require "luck": want fencing, server or a scenario`},
		{"verify: unknown lock", []string{"verify", "--lock", "nope"}, `unknown lock "nope"`},
		{"fault needs redlock", []string{"run", "--nemesis", "clock-quorum", "--topology", "sentinel"}, "--nemesis clock-quorum needs --topology redlock (this run: sentinel)"},
		{"external flag without external", []string{"run", "--redis", "127.0.0.1:6379"}, "--redis is for a Redis lockcheck does not run: add --backend external"},
		{"external without an address", []string{"run", "--backend", "external"}, "--backend external needs exactly one of --redis"},
		{"external and persistence", []string{"run", "--backend", "external", "--redis", "127.0.0.1:1", "--persistence", "aof-always"}, "an external Redis keeps its own settings"},
		{"external redlock on one node", []string{"verify", "--backend", "external", "--redis", "127.0.0.1:1", "--lock", "redlock"}, "the external Redis given is topology single, but this run wants redlock"},
		{"external empty password file", []string{"run", "--backend", "external", "--redis", "127.0.0.1:1", "--redis-password-file", expect("pw", "\n")}, "--redis-password-file: its first line is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runBin(t, bin, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; output:\n%s", code, exitUsage, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output %q does not say %q", out, tt.want)
			}
			if strings.Contains(out, "verdict") {
				t.Errorf("a usage error gave a verdict:\n%s", out)
			}
			if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 && tt.args[1] != "--lock-cmd" {
				t.Errorf("%d lines, want one:\n%s", lines, out)
			}
		})
	}
}

// TestCLI_RunThenCheck: a run's verdict is its exit status, and check on
// results/latest reaches the same verdict with the same status.
func TestCLI_RunThenCheck(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	for _, tc := range []struct {
		lock string
		code int
	}{{"setnx", exitValid}, {"broken-check-then-set", exitInvalid}} {
		stdout, code := runBin(t, bin, "run", "--lock", tc.lock, "--clients", "100", "--keys", "3", "--duration", "3s",
			"--ttl", "100ms", "--hold", "50ms", "--retry", "none", "--margin", "30ms", "-q", "--out", out)
		if code != tc.code {
			t.Fatalf("run %s: exit %d, want %d\n%s", tc.lock, code, tc.code, stdout)
		}
		if !strings.Contains(stdout, "results: "+out) {
			t.Errorf("run output does not name the results path:\n%s", stdout)
		}
		check, ccode := runBin(t, bin, "check", filepath.Join(out, "latest"))
		if ccode != code {
			t.Errorf("check %s: exit %d, run exited %d\n%s", tc.lock, ccode, code, check)
		}
		// Every file the check's summary names exists, in a check dir of
		// its own inside the run dir.
		named := 0
		for _, line := range strings.Split(check, "\n") {
			line = strings.TrimSpace(line)
			for _, prefix := range []string{"see ", "results: "} {
				if p, ok := strings.CutPrefix(line, prefix); ok {
					named++
					if _, err := os.Stat(p); err != nil {
						t.Errorf("check %s names %s: %v", tc.lock, p, err)
					}
					if !strings.Contains(p, filepath.Join(out, "latest", "check-")) {
						t.Errorf("check %s wrote %s, want it under %s", tc.lock, p, filepath.Join(out, "latest", "check-*"))
					}
				}
			}
		}
		if named == 0 || tc.code == exitInvalid && named < 2 {
			t.Errorf("check %s named %d files (want results.json, and a visualization when invalid):\n%s", tc.lock, named, check)
		}
	}
}

// TestCLI_Seeds: --seeds runs one seed after another and stops at the
// first run that is not valid, unless --keep-going; the exit status is
// the worst verdict.
func TestCLI_Seeds(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	args := []string{"run", "--clients", "100", "--keys", "3", "--duration", "2s", "--ttl", "100ms", "--hold", "50ms",
		"--retry", "none", "--margin", "30ms", "-q", "--out", out, "--seed", "1", "--seeds", "2"}
	for _, tc := range []struct {
		extra []string
		code  int
		tally string
	}{
		{[]string{"--lock", "setnx"}, exitValid, "seeds: 2 of 2 run: valid valid"},
		{[]string{"--lock", "broken-check-then-set"}, exitInvalid, "seeds: 1 of 2 run: invalid"},
		{[]string{"--lock", "broken-check-then-set", "--keep-going"}, exitInvalid, "seeds: 2 of 2 run: invalid invalid"},
	} {
		stdout, code := runBin(t, bin, append(args, tc.extra...)...)
		if code != tc.code || !strings.Contains(stdout, tc.tally) {
			t.Errorf("%v: exit %d, want %d, and %q in:\n%s", tc.extra, code, tc.code, tc.tally, stdout)
		}
		if n := strings.Count(stdout, "\nverdict: "); n != strings.Count(tc.tally, " ")-4 {
			t.Errorf("%v: %d verdicts printed for %q", tc.extra, n, tc.tally)
		}
	}
}

// TestCLI_CtrlC sends a real SIGINT to a running lockcheck: it must stop
// the clients, write and check the history, print the verdict, exit with
// the verdict's status, and leave no redis-server behind.
func TestCLI_CtrlC(t *testing.T) {
	testutil.RequireRedis(t)
	ctrlC(t, "local", func(pid int) int {
		if pids := testutil.RedisChildrenOf(pid); len(pids) > 0 {
			return pids[0]
		}
		return 0
	}, func(redisPID int) {
		if testutil.Alive(redisPID) {
			t.Errorf("redis-server %d still running after lockcheck exited", redisPID)
		}
	})
}

// TestCLI_CtrlC_Docker: the same on the docker backend; no container or
// network is left.
func TestCLI_CtrlC_Docker(t *testing.T) {
	testutil.RequireDocker(t)
	ctrlC(t, "docker", func(pid int) int {
		if len(testutil.DockerLeft(t, pid)) > 0 {
			return pid
		}
		return 0
	}, func(pid int) {
		if left := testutil.DockerLeft(t, pid); len(left) > 0 {
			t.Errorf("left behind after SIGINT: %v", left)
		}
	})
}

// ctrlC starts a run on backend, waits until started reports its Redis
// up (non-zero), interrupts it, and checks the run's ending; gone checks
// that Redis went with it.
func ctrlC(t *testing.T, backend string, started func(pid int) int, gone func(int)) {
	bin := lockcheck(t)
	out := t.TempDir()
	var stdout strings.Builder
	cmd := exec.Command(bin, "run", "--lock", "setnx", "--backend", backend, "--clients", "50", "--duration", "10m", "-q", "--out", out)
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Find the Redis it started, wait until the clients are recording
	// (on a loaded machine a container's Redis can take seconds to answer:
	// TestCLI_CtrlC_BeforeRun is an interrupt before that), then interrupt.
	var redisPID int
	for deadline := time.Now().Add(30 * time.Second); redisPID == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		redisPID = started(cmd.Process.Pid)
	}
	if redisPID == 0 {
		_ = cmd.Process.Kill()
		t.Fatal("lockcheck started no Redis within 30s")
	}
	if !waitFor(filepath.Join(out, "*", "*", "history.jsonl"), 30*time.Second) {
		_ = cmd.Process.Kill()
		t.Fatal("lockcheck recorded no op within 30s of starting Redis")
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The run would last 10 minutes: the interrupt ends it within its
	// stop phases' deadlines (the drain, the check, Redis's stop), which
	// stopDeadline holds on a loaded machine.
	ended, err := waitExit(cmd, stopDeadline)
	if !ended {
		t.Fatalf("still running %v after SIGINT (a run of 10 minutes): the interrupt did not stop it", stopDeadline)
	}
	if err != nil {
		t.Fatalf("exit after SIGINT: %v (want 0: the valid verdict)\n%s", err, stdout.String())
	}
	if s := stdout.String(); !strings.Contains(s, "(interrupted)") || !strings.Contains(s, "verdict: VALID") {
		t.Errorf("output after SIGINT lacks the interrupted summary and verdict:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(out, "latest", "results.json")); err != nil {
		t.Errorf("results after SIGINT: %v", err)
	}
	gone(redisPID)
}

// stopDeadline is how long a run told to stop (SIGINT, a full disk) may
// take to end: its drain (45 s), the check of a short history and
// Redis's stop on a loaded machine, far less than the runs' 10 minutes.
const stopDeadline = 3 * time.Minute

// waitExit waits for cmd to end, at most d; past it, cmd is killed and
// ended is false. err is cmd.Wait's.
func waitExit(cmd *exec.Cmd, d time.Duration) (ended bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return false, <-done
	}
}

// waitFor reports whether a non-empty file matching pattern appears
// within d (a history.jsonl: an op recorded).
func waitFor(pattern string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
				return true
			}
		}
	}
	return false
}

// TestCLI_CtrlC_BeforeRun: a SIGINT while Redis is still starting (the
// cluster topology's six nodes, interrupted as the first one appears) is
// not a harness failure: one line, exit 130, no verdict, no results, and
// every redis-server it had started is gone.
func TestCLI_CtrlC_BeforeRun(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	var stdout, stderr strings.Builder
	cmd := exec.Command(bin, "run", "--lock", "setnx", "--topology", "cluster", "--clients", "10", "--duration", "60s", "-q", "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var first []int
	for deadline := time.Now().Add(30 * time.Second); len(first) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		first = testutil.RedisChildrenOf(cmd.Process.Pid)
	}
	if len(first) == 0 {
		_ = cmd.Process.Kill()
		t.Fatal("lockcheck started no Redis within 30s")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var seen []int
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			seen = append(seen, testutil.RedisChildrenOf(cmd.Process.Pid)...)
		}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit after a SIGINT while Redis started: %v, want status %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "lockcheck: interrupted before a verdict (") {
		t.Errorf("stderr lacks the interrupted line:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "verdict:") {
		t.Errorf("a verdict printed for a run that never started:\n%s", stdout.String())
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*", "*", "results.json")); len(files) > 0 {
		t.Errorf("results written for a run that never started: %v", files)
	}
	for _, pid := range append(first, seen...) {
		if testutil.Alive(pid) {
			t.Errorf("redis-server %d still running after lockcheck exited", pid)
		}
	}
}

// TestBench_CtrlC: a bench interrupted after its first cell exits with the
// verdict of the cells it ran, as a run does: a broken lock caught in the
// first cell is still invalid (exit 1), not an interruption (130) or a
// harness failure (4).
func TestBench_CtrlC(t *testing.T) {
	testutil.RequireRedis(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ended struct {
		code int
		err  error
	}
	done := make(chan ended, 1)
	go func() {
		code, err := benchCmd(ctx, []string{"--lock", "broken-check-then-set", "--clients", "20,30", "--keys", "10",
			"--hold", "1ms", "--duration", "3s", "--warmup", "0s", "--out", out})
		done <- ended{code, err}
	}()
	// The first cell is judged once its results.json is written.
	if !waitFor(filepath.Join(out, "bench", "*", "runs", "*", "*", "results.json"), 60*time.Second) {
		cancel()
		<-done
		t.Fatal("the first bench cell wrote no results.json within 60s")
	}
	cancel()
	e := <-done
	if e.code != exitInvalid || e.err != nil {
		t.Fatalf("bench interrupted after a cell that caught the broken lock: exit %d, %v; want %d and no error", e.code, e.err, exitInvalid)
	}
	testutil.NoRedisChildren(t)
}

// TestCLI_CheckFailureKeepsOutDir: a check that cannot read its history
// removes the check dir it made, but never a directory the user gave.
func TestCLI_CheckFailureKeepsOutDir(t *testing.T) {
	bin := lockcheck(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, code := runBin(t, bin, "check", "--out", mine, empty); code != exitUsage {
		t.Fatalf("exit %d, want %d:\n%s", code, exitUsage, out)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's --out dir is gone: %v", err)
	}
	made := filepath.Join(dir, "made")
	runBin(t, bin, "check", "--out", made, empty)
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("a check dir made for a check that failed is still there (%v)", err)
	}
}

// TestCLI_UserLockRows: matrix and bench take a spec and a lock process
// as rows beside (or instead of) the built-in locks.
func TestCLI_UserLockRows(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	spec := "../examples/specs/setnx.toml"
	stdout, code := runBin(t, bin, "matrix", "--lock-spec", spec, "--faults", "none", "--duration", "2s", "--out", out)
	md, err := os.ReadFile(filepath.Join(out, "latest", "matrix.md"))
	if code != exitValid || err != nil || !strings.Contains(string(md), "| `spec-setnx` | valid |") || strings.Contains(string(md), "`redlock`") {
		t.Errorf("matrix --lock-spec: exit %d, %v; want a spec-setnx row alone, valid:\n%s\n%s", code, err, md, stdout)
	}
	stdout, code = runBin(t, bin, "bench", "--lock", "setnx", "--lock-spec", spec, "--clients", "10", "--keys", "10",
		"--duration", "2s", "--warmup", "0s", "--out", out)
	rows, _ := filepath.Glob(filepath.Join(out, "bench", "*", "bench.csv"))
	var body []byte
	if len(rows) == 1 {
		body, _ = os.ReadFile(rows[0])
	}
	if code != exitValid || !strings.Contains(string(body), "\nsetnx,") || !strings.Contains(string(body), "\nspec-setnx,") {
		t.Errorf("bench --lock setnx --lock-spec: exit %d; want rows for setnx and spec-setnx in bench.csv:\n%s\n%s", code, body, stdout)
	}
}

// TestCLI_External: a password-protected Redis the test started, run as
// external with the password in a file: valid, every key deleted, and
// the password in no file the run wrote nor in its output.
func TestCLI_External(t *testing.T) {
	c := testutil.StartRedis(t)
	bin := lockcheck(t)
	dir := t.TempDir()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(c.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runBin(t, bin, "run", "--backend", "external", "--redis", c.Nodes[0].Addr, "--redis-password-file", pw,
		"--duration", "2s", "--clients", "20", "--keys", "3", "--seed", "1", "-q", "--out", dir)
	if code != exitValid || !strings.Contains(out, "external redis: every key under \"lockcheck:") || !strings.Contains(out, " 0 left") {
		t.Fatalf("exit %d, want %d with the keys accounted for:\n%s", code, exitValid, out)
	}
	if strings.Contains(out, c.Password) {
		t.Errorf("the output holds the password")
	}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), c.Password) {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
	rc := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr, Password: c.Password})
	defer rc.Close()
	if n, err := rc.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("%d keys left on the server (%v), want 0", n, err)
	}
}

// TestCLI_Thresholds: a threshold the run cannot meet fails it with exit
// 99 and a failing JUnit case, one it meets passes, a safety violation
// still exits 1; report --compare --max-regression exits 99 when the
// after run acquires far less often than the before run (holds of
// 500 ms, which cap it) and 0 when it does not, as the two runs' own
// results.json figures say, and 0 against itself.
func TestCLI_Thresholds(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	dir := t.TempDir()
	base := []string{"run", "--duration", "2s", "--clients", "20", "--keys", "5", "--seed", "1", "-q"}
	runIn := func(name string, extra ...string) (string, int, string) {
		out, code := runBin(t, bin, append(append(base, "--out", filepath.Join(dir, name)), extra...)...)
		runs, _ := filepath.Glob(filepath.Join(dir, name, "*", "2*"))
		if len(runs) != 1 {
			t.Fatalf("%s: runs %v\n%s", name, runs, out)
		}
		return out, code, runs[0]
	}
	out, code, fast := runIn("fast", "--hold", "1ms", "--threshold", "acquisitions_per_sec>=1000000000", "--threshold", "stuck_acquires==0")
	if code != exitThreshold || !strings.Contains(out, "threshold FAIL  acquisitions_per_sec>=1000000000") || !strings.Contains(out, "threshold pass  stuck_acquires==0") {
		t.Errorf("exit %d, want %d with one failed and one passed threshold:\n%s", code, exitThreshold, out)
	}
	junit, _ := os.ReadFile(filepath.Join(fast, "junit.xml"))
	if !strings.Contains(string(junit), `type="threshold"`) {
		t.Errorf("junit.xml has no failed threshold case:\n%s", junit)
	}
	results, _ := os.ReadFile(filepath.Join(fast, "results.json"))
	for _, want := range []string{`"threshold": "acquisitions_per_sec>=1000000000"`, `"pass": false`, `"latency": {`, `"acquisitions_per_sec": `} {
		if !strings.Contains(string(results), want) {
			t.Errorf("results.json lacks %s", want)
		}
	}
	if out, code, _ := runIn("ok", "--hold", "1ms", "--threshold", "acquire.p99<10s"); code != exitValid {
		t.Errorf("a threshold met: exit %d, want 0:\n%s", code, out)
	}
	if out, code, _ := runIn("broken", "--lock", "broken-check-then-set", "--hold", "1ms", "--threshold", "acquisitions_per_sec>=1000000000"); code != exitInvalid {
		t.Errorf("a broken lock with a failed threshold: exit %d, want 1:\n%s", code, out)
	}
	// The slow run's holds of 500 ms on 5 keys cap it at about 25
	// acquisitions in 2 s, whatever the machine; the exit compare owes is
	// read off the two runs' own figures, so that a machine too slow to
	// make fast the faster is logged, not failed.
	_, _, slow := runIn("slow", "--hold", "500ms", "--hold-dist", "fixed")
	page := filepath.Join(dir, "compare.html")
	fastRate, slowRate := acquisitionsPerSec(t, fast), acquisitionsPerSec(t, slow)
	wantReg := slowRate < fastRate*0.9
	if !wantReg {
		t.Logf("fast %.1f acquisitions/s, slow %.1f: this machine made no regression of them; the regression branch is not exercised", fastRate, slowRate)
	}
	out, code = runBin(t, bin, "report", "--compare", fast, slow, "--out", page, "--max-regression", "10%")
	if gotReg := code == exitThreshold && strings.Contains(out, "regression: acquisitions/s"); gotReg != wantReg || (!wantReg && code != exitValid) {
		t.Errorf("compare fast→slow (%.1f→%.1f acquisitions/s): exit %d, want a regression named %v:\n%s", fastRate, slowRate, code, wantReg, out)
	}
	if out, code := runBin(t, bin, "report", "--compare", fast, fast, "--out", page, "--max-regression", "10%"); code != exitValid {
		t.Errorf("compare a run with itself: exit %d, want 0:\n%s", code, out)
	}
	if out, code := runBin(t, bin, "report", "--compare", fast, slow, "--out", page, "--max-regression", "ten"); code != exitUsage {
		t.Errorf("--max-regression ten: exit %d, want 2:\n%s", code, out)
	}
	// bench and verify gate on thresholds too.
	if out, code := runBin(t, bin, "bench", "--clients", "20", "--keys", "100", "--duration", "2s", "--warmup", "500ms",
		"--threshold", "acquire.p99<1us", "--out", dir); code != exitThreshold || !strings.Contains(out, "thresholds: 1 failed") {
		t.Errorf("bench with a threshold it cannot meet: exit %d, want %d:\n%s", code, exitThreshold, out)
	}
	if out, code := runBin(t, bin, "verify", "--scenario", "contention", "--seed", "1", "-q", "--threshold", "acquire.p99<1us", "--out", dir); code != exitThreshold || !strings.Contains(out, "threshold failed: acquire.p99<1us") {
		t.Errorf("verify with a threshold it cannot meet: exit %d, want %d:\n%s", code, exitThreshold, out)
	}
}

// acquisitionsPerSec is a run dir's acquisitions/s, from its results.json.
func acquisitionsPerSec(t *testing.T, dir string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Throughput struct {
			AcquisitionsPerSec float64 `json:"acquisitions_per_sec"`
		} `json:"throughput"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s/results.json: %v", dir, err)
	}
	return r.Throughput.AcquisitionsPerSec
}

// TestCLI_KilledRun: a run killed outright (SIGKILL) leaves a history
// that check reads: every whole line is checked; and when the last line
// stopped mid-write (made certain here by cutting the file inside its
// last line), check says which line was cut off in one line, checks the
// ops before it and gives their verdict. No redis-server outlives the
// killed lockcheck (Pdeathsig).
func TestCLI_KilledRun(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "--lock", "setnx", "--clients", "20", "--duration", "60s", "-q", "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(filepath.Join(out, "*", "*", "history.jsonl"), 30*time.Second) {
		_ = cmd.Process.Kill()
		t.Fatal("lockcheck recorded no op within 30s")
	}
	redisPIDs := testutil.RedisChildrenOf(cmd.Process.Pid)
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	files, _ := filepath.Glob(filepath.Join(out, "*", "*", "history.jsonl"))
	if len(files) != 1 {
		t.Fatalf("histories %v, want one", files)
	}
	dir := filepath.Dir(files[0])
	if s, code := runBin(t, bin, "check", dir, "--out", t.TempDir()); code != 0 || !strings.Contains(s, "verdict: valid") {
		t.Fatalf("check of the killed run: exit %d\n%s", code, s)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// The last line's start, whether or not the kill itself cut it.
	last := strings.LastIndex(strings.TrimSuffix(string(b), "\n"), "\n") + 1
	if err := os.WriteFile(files[0], b[:min(last+20, len(b)-2)], 0o644); err != nil {
		t.Fatal(err)
	}
	s, code := runBin(t, bin, "check", dir, "--out", t.TempDir())
	want := "is cut off"
	if code != 0 || !strings.Contains(s, want) || !strings.Contains(s, "verdict: valid") || strings.Count(s, want) != 1 {
		t.Errorf("check of a history cut mid-line: exit %d, want 0, one line saying %q and the verdict\n%s", code, want, s)
	}
	for _, pid := range redisPIDs {
		for deadline := time.Now().Add(30 * time.Second); testutil.Alive(pid) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if testutil.Alive(pid) {
			t.Errorf("redis-server %d outlived the killed lockcheck by 30 s", pid)
		}
	}
}

// fullDisk mounts a tmpfs of size bytes for the test (root only).
func fullDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs: %v %s (needs root)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// TestCLI_DiskFull: a disk that fills during a run stops it at once (not
// at the end of its 10 minutes), exit 4 naming the history, no verdict; a check
// whose output dir is full exits 4 with no verdict either. Nothing is
// left running.
func TestCLI_DiskFull(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	disk := fullDisk(t, "1m")
	cmd := exec.Command(bin, "run", "--lock", "setnx", "--clients", "50", "--keys", "20", "--hold", "1ms", "--duration", "10m", "-q", "--out", disk)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped, err := waitExit(cmd, stopDeadline)
	code := cmd.ProcessState.ExitCode()
	if !stopped || code != 4 || !strings.Contains(stderr.String(), "no space left on device") ||
		!strings.Contains(stderr.String(), "history") || strings.Contains(stdout.String(), "verdict") {
		t.Fatalf("run on a disk that fills: %v, exit %d (ended before the %v deadline: %v); want exit 4 at once, naming the history, no verdict\nstdout:\n%s\nstderr:\n%s",
			err, code, stopDeadline, stopped, stdout.String(), stderr.String())
	}
	testutil.NoRedisChildren(t)

	ok := t.TempDir()
	if s, code := runBin(t, bin, "run", "--lock", "setnx", "--clients", "5", "--duration", "1s", "-q", "--out", ok); code != 0 {
		t.Fatalf("a run to check: exit %d\n%s", code, s)
	}
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(make([]byte, 2<<20)) // fills the rest of the disk
	f.Close()
	s, code := runBin(t, bin, "check", filepath.Join(ok, "latest"), "--out", filepath.Join(disk, "check"))
	if code != 4 || strings.Contains(s, "verdict") || !strings.Contains(s, "no space left on device") {
		t.Errorf("check into a full dir: exit %d, want 4 with no verdict\n%s", code, s)
	}
}

// TestCLI_OutAndNames: --out naming a file is one line and exit 2; a
// lock refused after the run dir was made (a spec script that does not
// compile, found when the lock is built on a started Redis) leaves no run
// dir behind and does not point at one; a --name with a newline cannot
// forge a verdict line, nor put one into a path.
func TestCLI_OutAndNames(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, code := runBin(t, bin, "run", "--duration", "1s", "--out", file); code != 2 || !strings.Contains(s, "--out") || strings.Count(strings.TrimSpace(s), "\n") > 1 {
		t.Errorf("--out a file: exit %d, want 2 with one line naming --out\n%s", code, s)
	}

	src, err := os.ReadFile("../examples/specs/setnx.toml")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(spec, []byte(strings.Replace(string(src), "else return 0 end", "els return 0 end", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	s, code := runBin(t, bin, "run", "--lock-spec", spec, "--duration", "1s", "--out", out)
	left, _ := filepath.Glob(filepath.Join(out, "*", "*"))
	if code != 2 || strings.Contains(s, "what was recorded") || len(left) > 0 {
		t.Errorf("a spec that does not compile: exit %d, run dirs left %v; want 2, none, no pointer to one\n%s", code, left, s)
	}

	out = t.TempDir()
	s, code = runBin(t, bin, "run", "--duration", "1s", "--clients", "5", "-q", "--name", "x\nverdict: INVALID", "--out", out)
	dirs, _ := filepath.Glob(filepath.Join(out, "x*"))
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "verdict: INVALID") {
			t.Errorf("a forged verdict line in the output of a valid run:\n%s", s)
		}
	}
	if code != 0 || len(dirs) != 1 || strings.ContainsAny(filepath.Base(dirs[0]), "\n/") {
		t.Errorf("exit %d, dirs %q: want 0 and one dir without a newline", code, dirs)
	}
}

// TestCLI_LockProcessGroupGone: a lock program that leaves a child of its
// own (sleep, with a marker argument) is gone with everything it started
// after lockcheck is killed outright, and after two Ctrl-Cs; the process
// table is read to check.
func TestCLI_LockProcessGroupGone(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	lockproc := filepath.Join(t.TempDir(), "lockproc")
	if out, err := exec.Command("go", "build", "-o", lockproc, "../examples/lockproc").CombinedOutput(); err != nil {
		t.Fatalf("build lockproc: %v\n%s", err, out)
	}
	for _, stop := range []string{"SIGKILL", "two SIGINTs"} {
		t.Run(stop, func(t *testing.T) {
			marker := strconv.Itoa(int(time.Now().UnixNano()%1e9)) + ".5"
			out := t.TempDir()
			cmd := exec.Command(bin, "run", "--lock-cmd", "sleep "+marker+" & "+lockproc, "--clients", "5", "--duration", "60s", "-q", "--out", out)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !waitFor(filepath.Join(out, "*", "*", "history.jsonl"), 30*time.Second) || len(withArg(marker)) == 0 {
				_ = cmd.Process.Kill()
				t.Fatalf("no op recorded, or no marker process (%v)", withArg(marker))
			}
			if stop == "SIGKILL" {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			} else {
				_ = cmd.Process.Signal(syscall.SIGINT)
				time.Sleep(50 * time.Millisecond)
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			_ = cmd.Wait()
			for deadline := time.Now().Add(30 * time.Second); len(withArg(marker)) > 0 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			if left := withArg(marker); len(left) > 0 {
				t.Errorf("30 s after %s, the lock program's child still runs: pids %v", stop, left)
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// withArg lists the pids whose command line has arg, from /proc.
func withArg(arg string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestCLI_CheckInterrupted: SIGTERM in the middle of a search that would
// run to its timeout (a key of 400 ops reaching ten TTLs with one lease of
// twelve TTLs among them, which no reduction decides and porcupine does
// not finish: checker/testdata/slow-ops-long-lease.jsonl) ends lockcheck
// check at once, exit 3, its results written with the key unknown
// because the check was interrupted.
func TestCLI_CheckInterrupted(t *testing.T) {
	bin := lockcheck(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "check", "../checker/testdata/slow-ops-long-lease.jsonl", "--clock-tolerance", "50ms", "--out", out)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Into the search (its timeout: 5 min): once the check has spent a
	// second of CPU (reading the 400 ops takes milliseconds), an event a
	// busy machine delays but cannot skip, as it could a fixed sleep.
	for deadline := time.Now().Add(2 * time.Minute); cpuTime(cmd.Process.Pid) < time.Second; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the check spent %v of CPU in 2 minutes: not searching", cpuTime(cmd.Process.Pid))
		}
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUnknown {
		t.Fatalf("exit after SIGTERM: %v, want %d (unknown)\n%s", err, exitUnknown, stdout.String())
	}
	// Far from the 5 min the search would have had (a stop is
	// milliseconds; a minute holds a loaded machine's).
	if took > time.Minute {
		t.Errorf("took %v to stop after SIGTERM, its search's 5 min timeout not cut short", took)
	}
	rf, err := report.ReadResults(out)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, c := range rf.Checkers {
		for _, u := range c.Undecided {
			reasons = append(reasons, u.Reason)
		}
	}
	if rf.Verdict != checker.Unknown || !slices.Equal(reasons, []string{checker.Interrupted}) {
		t.Errorf("results.json: verdict %s, undecided %v; want unknown, one key interrupted", rf.Verdict, reasons)
	}
}

// cpuTime is the user and system CPU time process pid has spent
// (/proc/pid/stat, in clock ticks of 10 ms), 0 if it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The fields after the command's ")": state is the first, utime and
	// stime the 12th and 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
