package lockchecktest_test

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestReplay_BothWays: a plan file replayed as a go test, with the test's
// own lock in place of the one its command names (broken-del-release,
// 20 clients overrunning a 100 ms TTL on one key for 2 s): the fixed lock
// (setnx, whose release checks its token) passes every run; the broken
// one fails the test saying how many runs broke, and passes a test that
// wants the plan to still find the break; a plan file that is not one is
// one fatal line.
func TestReplay_BothWays(t *testing.T) {
	const plan = "testdata/overrun-plan.json"
	reg := lockimpl.All()
	fixed, _ := reg.Lookup("setnx")
	broken, _ := reg.Lookup("broken-del-release")

	rec := &recorder{TB: t}
	if res := lockchecktest.Replay(rec, "fixed", fixed.Factory, lockchecktest.ReplayOptions{Plan: plan, Runs: 2}); len(rec.errs) != 0 || len(res) != 2 {
		t.Errorf("fixed lock: %d runs, the helper reported %q; want 2 runs, none broken", len(res), rec.errs)
	} else if res[0].Ops == 0 {
		t.Errorf("fixed lock: a run of %d ops", res[0].Ops)
	}

	rec = &recorder{TB: t}
	lockchecktest.Replay(rec, "broken", broken.Factory, lockchecktest.ReplayOptions{Plan: plan, Runs: 2})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "of 2 runs broke") || !strings.Contains(rec.errs[0], "verdict invalid, want valid") {
		t.Errorf("broken lock: the helper reported %q, want one failure counting the runs that broke", rec.errs)
	}
	rec = &recorder{TB: t}
	lockchecktest.Replay(rec, "broken", broken.Factory, lockchecktest.ReplayOptions{Plan: plan, Runs: 2, Want: checker.Invalid})
	if len(rec.errs) != 0 {
		t.Errorf("broken lock, the break wanted: the helper reported %q", rec.errs)
	}

	fr := &fatalRecorder{recorder: recorder{TB: t}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lockchecktest.Replay(fr, "fixed", fixed.Factory, lockchecktest.ReplayOptions{Plan: "testdata/no-such-plan.json"})
	}()
	<-done
	if !strings.Contains(fr.fatal, "no-such-plan.json") || strings.Contains(fr.fatal, "\n") {
		t.Errorf("missing plan: fatal %q, want one line naming the file", fr.fatal)
	}
}
