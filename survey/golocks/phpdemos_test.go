package golocks_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/survey"
)

// runPHPDemo runs the PHP demonstration registered as name (survey's
// phpDemos: php <script>, from the repository's root) and requires exit
// want and marker in its output. It skips without php, and fails then
// if LOCKCHECK_REQUIRE_PYREDIS is set (make test), as the Python and PHP
// adapters' tests do. keys are the Mechanisms it must be the
// demonstration of (survey.DemoFor); every key it shows must be one of
// survey.Mechanisms. Each demo bounds itself (under 15 s) and stops what
// it starts by PID; the deadline here only catches one that does not.
func runPHPDemo(t *testing.T, name string, want int, marker string, keys ...string) {
	t.Helper()
	testutil.RequireRedis(t)
	if _, err := exec.LookPath("php"); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_PYREDIS") != "" {
			t.Fatalf("php is required here (LOCKCHECK_REQUIRE_PYREDIS is set): %v; apt-get install php-cli php-redis php-symfony-lock php-symfony-semaphore php-malkusch-lock", err)
		}
		t.Skipf("php not installed (apt-get install php-cli php-redis php-symfony-lock php-symfony-semaphore php-malkusch-lock)")
	}
	i := slices.IndexFunc(survey.Demos, func(d survey.Demo) bool { return d.Name == name })
	if i < 0 {
		t.Fatalf("no demonstration %q in survey.Demos", name)
	}
	d := survey.Demos[i]
	if len(d.Cmd) != 2 || d.Cmd[0] != "php" || d.Dir != "" {
		t.Fatalf("%s: Cmd %q in %q, want php <script> from the root", name, d.Cmd, d.Dir)
	}
	for _, k := range d.Shows {
		if _, ok := survey.Mechanisms[k]; !ok {
			t.Errorf("%s shows %q, which is not in survey.Mechanisms", name, k)
		}
	}
	for _, k := range keys {
		if got, ok := survey.DemoFor(k); !ok || got.Name != name {
			t.Errorf("survey.DemoFor(%q) = %q, %v; want %q", k, got.Name, ok, name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Cmd[0], d.Cmd[1:]...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if code != want || !strings.Contains(string(out), marker) {
		t.Fatalf("%s: exit %d after %v, output:\n%s\nwant exit %d and %q", name, code, time.Since(start).Round(time.Millisecond), out, want, marker)
	}
	t.Logf("%s, exit %d after %v:\n%s", name, code, time.Since(start).Round(time.Millisecond), out)
}

// TestPHPDemo_PhpredisDesync: with the adapter's 0.5 s read timeout, an
// EVAL whose reply timed out leaves the connection one reply behind
// (malkusch pause-redis and stall-quiet).
func TestPHPDemo_PhpredisDesync(t *testing.T) {
	runPHPDemo(t, "phpredis-desync", 1, "one command late", "malkusch pause-redis", "malkusch stall-quiet")
}

// TestPHPDemo_PhpredisDefaultTimeout: at phpredis's default read
// timeout (malkusch's README), the same stall only delays the replies:
// exit 0, the desync not shown at the library's default.
func TestPHPDemo_PhpredisDefaultTimeout(t *testing.T) {
	runPHPDemo(t, "phpredis-default-timeout", 0, "replies in step")
}

// TestPHPDemo_SymfonySemaphoreExpireat: a 0.5 s TTL fails RedisStore's
// save script at EXPIREAT after its ZADDs stay: acquire() false, the
// phantom member refusing another client with nobody holding,
// refresh(0.5) throwing.
func TestPHPDemo_SymfonySemaphoreExpireat(t *testing.T) {
	runPHPDemo(t, "symfony-semaphore-expireat", 1, "fails at EXPIREAT after the ZADDs stay",
		"symfony-semaphore overrun", "symfony-semaphore overrun-free", "symfony-semaphore extend", "symfony-semaphore pause", "symfony-semaphore crash",
		"symfony-semaphore cut-off", "symfony-semaphore pause-redis", "symfony-semaphore lost-reply", "symfony-semaphore stall-quiet",
		"symfony-semaphore-3 overrun", "symfony-semaphore-3 client-clock", "symfony-semaphore-3 stall-quiet")
}

// TestPHPDemo_SymfonySemaphoreSecond: a 1 s lease taken late in a second
// is granted again after the next whole second, within its TTL.
func TestPHPDemo_SymfonySemaphoreSecond(t *testing.T) {
	runPHPDemo(t, "symfony-semaphore-second", 1, "granted twice within the TTL",
		"symfony-semaphore contention", "symfony-semaphore kill-always", "symfony-semaphore kill-delayed", "symfony-semaphore kill-extend",
		"symfony-semaphore-3 contention", "symfony-semaphore-3 kill-none", "symfony-semaphore-3 clock-jump")
}

// TestPHPDemo_SymfonySharedRefresh: a reader's refresh after its lease
// expired succeeds while another reader keeps the key, and a lone
// reader's is refused.
func TestPHPDemo_SymfonySharedRefresh(t *testing.T) {
	runPHPDemo(t, "symfony-shared-refresh", 1, "the expired lease lives again", "symfony-shared extend")
}

// TestPHPDemo_MalkuschTimeoutPlusOne: PHPRedisMutex's key of timeout + 1
// outlives a restart delayed by the timeout + 500 ms.
func TestPHPDemo_MalkuschTimeoutPlusOne(t *testing.T) {
	runPHPDemo(t, "malkusch-timeout-plus-one", 1, "timeout 1 is a 2 s key", "malkusch kill-delayed")
}

// TestPHPDemo_RedlockBareMajority: both PHP Redlocks lose a lease on a
// bare majority to one restart without persistence.
func TestPHPDemo_RedlockBareMajority(t *testing.T) {
	runPHPDemo(t, "redlock-bare-majority", 1, "lost a lease to one restart: granted to a second client while the first held, in symfony-redlock and malkusch-redlock",
		"symfony-redlock kill-quorum", "malkusch-redlock kill-quorum")
}

// TestPHPDemo_RedlockClockQuorum: both PHP Redlocks lose a lease on a
// bare majority to one node's clock jump (lockcheck's clock shim, built
// with cc).
func TestPHPDemo_RedlockClockQuorum(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skipf("no C compiler to build the clock shim: %v", err)
	}
	runPHPDemo(t, "redlock-clock-quorum", 1, "lost a lease to one node's clock: granted to a second client while the first held, in symfony-redlock and malkusch-redlock",
		"symfony-redlock clock-quorum", "malkusch-redlock clock-quorum")
}

// TestPHPDemo_SymfonyRedlockRefresh: a refresh short of a majority, one
// master of a bare majority down, deletes a live lease where it is held.
func TestPHPDemo_SymfonyRedlockRefresh(t *testing.T) {
	runPHPDemo(t, "symfony-redlock-refresh", 1, "lost to one refresh with one master down", "symfony-redlock kill-extend")
}
