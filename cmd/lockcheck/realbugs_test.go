package main

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

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
	text, code := runBin(t, bin, "verify", "--lock", "redsync", "--scenario", "kill-quorum", "--require", "kill-quorum", "--seed", "1", "-q", "--out", t.TempDir())
	if code != exitInvalid || !strings.Contains(text, "broke in kill-quorum") {
		t.Errorf("redsync at kill-quorum: exit %d, want 1, broken in kill-quorum\n%s", code, text)
	}
	text, code = runBin(t, bin, "verify", "--lock", "redsync", "--scenario", "kill-delayed", "--require", "kill-delayed", "--seed", "1", "-q", "--out", t.TempDir())
	if code != exitValid {
		t.Errorf("redsync with delayed restarts: exit %d, want 0\n%s", code, text)
	}
	testutil.NoRedisChildren(t)
}

// TestCLI_RealBugRedsync151: redsync between PR #149 and PR #151, whose
// extend released the lease on every master when one master erred, and
// still said the extend was done. broken-redlock-extend-cleanup is
// caught at verify's kill-extend (a master down while leases are
// extended): the holder goes on, another client acquires, both
// guarantees break. Redlock without the clean-up, and redsync as it is
// (v4.18.1, after #151), pass the same scenario.
func TestCLI_RealBugRedsync151(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	text, code := runBin(t, bin, "verify", "--lock", "broken-redlock-extend-cleanup", "--scenario", "kill-extend", "--require", "kill-extend",
		"--seed", "1", "-q", "--out", t.TempDir())
	if code != exitInvalid || !strings.Contains(text, "broke in kill-extend") || !strings.Contains(text, "lease invalid") {
		t.Errorf("broken-redlock-extend-cleanup at kill-extend: exit %d, want 1, the lease contract broken in kill-extend\n%s", code, text)
	}
	for _, fixed := range []string{"redlock", "redsync"} {
		text, code := runBin(t, bin, "verify", "--lock", fixed, "--scenario", "kill-extend", "--require", "kill-extend", "--seed", "1", "-q", "--out", t.TempDir())
		if code != exitValid {
			t.Errorf("%s at kill-extend: exit %d, want 0\n%s", fixed, code, text)
		}
	}
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
	text, code := runBin(t, bin, "verify", "--lock", "broken-wait-ignored", "--scenario", "partition", "--require", "partition",
		"--seed", "1", "-q", "--out", t.TempDir())
	if code != exitInvalid || !strings.Contains(text, "broke in partition") {
		t.Errorf("broken-wait-ignored at partition: exit %d, want 1, broken in partition\n%s", code, text)
	}
	text, code = runBin(t, bin, "verify", "--lock", "setnx-wait-all", "--scenario", "partition", "--require", "partition", "--seed", "1", "-q", "--out", t.TempDir())
	if code != exitValid {
		t.Errorf("setnx-wait-all at partition: exit %d, want 0\n%s", code, text)
	}
	testutil.NoRedisChildren(t)
}
