package cli

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestCLI_ProcessWaiters: blocking acquires (--wait 2s) through the
// lock-process protocol, the lock served as a process (lockcheck serve):
// each acquire's request carries its wait, the process declares its
// wake-up bound in its ping's reply and says when it sent the try that
// took the key. setnx-block, polling every 25 ms inside its bound of
// 1 s, has no starved waiter (exit 0); broken-wait-slow-poll, polling
// every 1 s inside a declared 250 ms, has starved waiters (exit 1). The
// same run configuration for both; each run's waiters had their key
// freed while they waited (free_while_waiting), the chance either needs.
func TestCLI_ProcessWaiters(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	figure := func(out, name string) int {
		m := regexp.MustCompile(name + `=(\d+)`).FindStringSubmatch(out)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, tc := range []struct {
		lock    string
		code    int
		starved bool
	}{{"setnx-block", exitValid, false}, {"broken-wait-slow-poll", exitInvalid, true}} {
		out, code := runBin(t, bin, "run", "--lock-cmd", bin+" serve --lock "+tc.lock, "--clients", "10", "--keys", "2", "--duration", "6s",
			"--ttl", "1s", "--hold", "100ms", "--op-timeout", "1s", "--wait", "2s", "--seed", "1", "--out", filepath.Join(t.TempDir(), "runs"))
		blocking, free, starved := figure(out, "blocking_acquires"), figure(out, "free_while_waiting"), figure(out, "starved_waiters")
		t.Logf("%s: exit %d, blocking_acquires %d, free_while_waiting %d, starved_waiters %d", tc.lock, code, blocking, free, starved)
		if blocking <= 0 || free <= 0 {
			t.Fatalf("%s: blocking_acquires %d, free_while_waiting %d: no waiter through the process had its key freed while it waited\n%s", tc.lock, blocking, free, out)
		}
		if code != tc.code || (starved > 0) != tc.starved {
			t.Errorf("%s: exit %d, starved_waiters %d; want exit %d, starved %v\n%s", tc.lock, code, starved, tc.code, tc.starved, out)
		}
	}
}
