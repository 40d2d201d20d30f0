package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/shrink"
)

// TestShrink_BrokenDelRelease shrinks a real break: broken-del-release
// under overrun's workload (holds outliving a 100 ms TTL) with a
// pause-client window a second, 50 clients on 3 keys. The shrink,
// interrupted by a real SIGINT after its first accepted step, exits 130
// with its state written; run again, it says it resumes and ends with a
// plan of at most 3 clients, 1 key and 2 windows that still breaks with
// the same finding, in its own measurement and in lockcheck run --plan.
// The budget bounds it on a loaded machine; on a quiet one the shrink
// ends in about a minute, its phases done before their deadlines.
func TestShrink_BrokenDelRelease(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	stdout, code := runBin(t, bin, "run", "--lock", "broken-del-release", "--clients", "50", "--keys", "3", "--ttl", "100ms",
		"--hold", "100ms", "--hold-dist", "uniform", "--retry", "none", "--duration", "4s", "--op-timeout", "500ms", "--margin", "30ms",
		"--nemesis", "pause-client", "--nemesis-interval", "1s", "--nemesis-duration", "300ms", "--seed", "1", "-q", "--out", out)
	if code != exitInvalid {
		t.Fatalf("the run to shrink: exit %d, want %d (invalid)\n%s", code, exitInvalid, stdout)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "broken-del-release", "2*"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v, want one", dirs)
	}
	args := []string{"shrink", "--from", dirs[0], "--budget", "3m", "--runs", "3", "--measure", "3"}
	state := filepath.Join(dirs[0], "shrink", "shrink-state.json")

	// The first shrink, stopped by SIGINT once a step is accepted.
	log := filepath.Join(t.TempDir(), "shrink.log")
	lf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitForLine(log, 2*time.Minute, "shrink: duration: ", "shrink: clients: ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b, _ := os.ReadFile(log)
		t.Fatalf("no step accepted within 2 minutes:\n%s", b)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	ended, err := waitExit(cmd, stopDeadline)
	b, _ := os.ReadFile(log)
	if !ended {
		t.Fatalf("shrink still running %v after SIGINT:\n%s", stopDeadline, b)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("shrink after SIGINT: %v, want exit %d\n%s", err, exitInterrupted, b)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state after SIGINT: %v\n%s", err, b)
	}
	if left := testutil.RedisChildren(); len(left) > 0 {
		t.Errorf("redis-server %v left after the interrupted shrink", left)
	}

	// Run again: it resumes and ends.
	stdout, code = runBin(t, bin, args...)
	if code != exitValid {
		t.Fatalf("resumed shrink: exit %d\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "shrink: resuming from "+state) {
		t.Errorf("the second shrink does not say it resumes from %s:\n%s", state, stdout)
	}
	var p shrink.Plan
	pb, err := os.ReadFile(filepath.Join(dirs[0], "shrink", "plan.json"))
	if err == nil {
		err = json.Unmarshal(pb, &p)
	}
	if err != nil {
		t.Fatalf("plan.json: %v\n%s", err, stdout)
	}
	if s := p.Size(); s.Clients > 3 || s.Keys != 1 || s.Windows > 2 {
		t.Errorf("shrunk to %v, want at most 3 clients, 1 key, 2 windows\n%s", s, stdout)
	}
	if p.Shrunk == nil || p.Shrunk.Reproduced < 1 || p.Shrunk.Finding.Checker == "" {
		t.Errorf("plan's account %+v: want its finding and at least one of its measured runs broken", p.Shrunk)
	}
	replay, code := runBin(t, bin, "run", "--plan", filepath.Join(dirs[0], "shrink", "plan.json"), "--runs", "5", "-q", "--out", t.TempDir())
	if code != exitInvalid || !strings.Contains(replay, "runs broke") {
		t.Errorf("lockcheck run --plan of the shrunk plan: exit %d, want %d (it breaks)\n%s", code, exitInvalid, replay)
	}
}

// waitForLine reports whether a line starting with one of prefixes
// appears in the file at path within d.
func waitForLine(path string, d time.Duration, prefixes ...string) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			for _, p := range prefixes {
				if strings.HasPrefix(l, p) {
					return true
				}
			}
		}
	}
	return false
}
