package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

// lockcheck builds the binary once per test run.
func lockcheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
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
	good := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","ttl_ms":5,"call":1,"return":2}`
	if err := os.WriteFile(corrupt, []byte(good+"\n{\"index\":1,\"process\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("../../examples/specs/setnx.toml")
	if err != nil {
		t.Fatal(err)
	}
	badSpec := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badSpec, []byte(strings.Replace(string(spec), `args = ["{token}"]`, `args = ["{tokn}"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"corrupt history", []string{"check", corrupt}, "history.jsonl line 2: not a history op"},
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
	cmd := exec.Command(bin, "run", "--lock", "setnx", "--backend", backend, "--clients", "50", "--duration", "60s", "-q", "--out", out)
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Find the Redis it started, then interrupt it.
	var redisPID int
	for deadline := time.Now().Add(30 * time.Second); redisPID == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		redisPID = started(cmd.Process.Pid)
	}
	if redisPID == 0 {
		_ = cmd.Process.Kill()
		t.Fatal("lockcheck started no Redis within 30s")
	}
	time.Sleep(2 * time.Second)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v to stop after SIGINT", d)
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
