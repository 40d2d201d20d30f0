package cli

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

// verifyBreaks runs lockcheck verify of lock at scenario, required, with
// seed 1, and wants it broken there (exit 1) with want in its summary
// ("" for none).
func verifyBreaks(t *testing.T, bin, lock, scenario, want string) {
	t.Helper()
	text, code := verifyRequired(t, bin, lock, scenario)
	if code != exitInvalid || !strings.Contains(text, "broke in "+scenario) || !strings.Contains(text, want) {
		t.Errorf("%s at %s: exit %d, want 1, broken in %s (%q)\n%s", lock, scenario, code, scenario, want, text)
	}
}

// verifyPasses wants lock to pass scenario, required, with seed 1.
func verifyPasses(t *testing.T, bin, lock, scenario string) {
	t.Helper()
	if text, code := verifyRequired(t, bin, lock, scenario); code != exitValid {
		t.Errorf("%s at %s: exit %d, want 0\n%s", lock, scenario, code, text)
	}
}

func verifyRequired(t *testing.T, bin, lock, scenario string) (string, int) {
	return runBin(t, bin, "verify", "--lock", lock, "--scenario", scenario, "--require", scenario, "--seed", "1", "-q", "--out", t.TempDir())
}

// TestCLI_RealBugRedsync186: redsync #186, a lease held on a bare
// majority of the Redlock masters that one master's restart without
// persistence breaks, letting a second client win a majority. redsync
// (the library, unchanged) is caught at verify's kill-quorum when it is
// required: two masters down put every lease on a bare majority, and at
// half-time one of its nodes restarts empty beside the two returning
// empty, every time (a split vote before a kill-none kill, the way the
// issue met it, came about two runs in three, and in none of eight on a
// busy machine). Its remedy, the Redlock documentation's delayed restart
// (kill-delayed: the node down longer than the TTL), passes.
func TestCLI_RealBugRedsync186(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	verifyBreaks(t, bin, "redsync", "kill-quorum", "")
	verifyPasses(t, bin, "redsync", "kill-delayed")
	testutil.NoRedisChildren(t)
}

// TestCLI_RealBugRedsync151: redsync between PR #149 and PR #151, whose
// extend released the lease on every master when one master erred, and
// still said the extend was done. broken-redlock-extend-cleanup is
// caught at verify's kill-extend (a master down while leases are
// extended): the holder goes on, another client acquires, the lease
// contract breaks. Redlock without the clean-up, and redsync as it is
// (v4.18.1, after #151), pass the same scenario.
func TestCLI_RealBugRedsync151(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	verifyBreaks(t, bin, "broken-redlock-extend-cleanup", "kill-extend", "lease invalid")
	verifyPasses(t, bin, "redlock", "kill-extend")
	verifyPasses(t, bin, "redsync", "kill-extend")
	testutil.NoRedisChildren(t)
}

// TestCLI_RealBugRedisson3994: Redisson #3994, a lock that sends WAIT
// for the replicas with each command and ignores its reply. Caught at
// verify's partition (a split brain: the cut-off master grants leases
// no replica acknowledged, the promoted replica grants them again); its
// fix, setnx-wait-all (an outcome counts only when every replica
// acknowledged it), passes the same scenario.
func TestCLI_RealBugRedisson3994(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	verifyBreaks(t, bin, "broken-wait-ignored", "partition", "")
	verifyPasses(t, bin, "setnx-wait-all", "partition")
	testutil.NoRedisChildren(t)
}

// TestCLI_RealBugRedisson7272: Redisson #7272, a watchdog renewal armed
// by an acquire whose caller had already given up on it, which nothing
// cancels: the key stays locked with no holder. broken-watchdog-leak is
// caught at verify's stall-quiet (acquires queued in a stalled Redis
// take effect after their callers gave up, then a quiet spell in which
// the key must come free); watchdog, whose renewals start only for an
// acquire that returned a lease, passes the same scenario.
func TestCLI_RealBugRedisson7272(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	verifyBreaks(t, bin, "broken-watchdog-leak", "stall-quiet", "stuck lock")
	verifyPasses(t, bin, "watchdog", "stall-quiet")
	testutil.NoRedisChildren(t)
}
