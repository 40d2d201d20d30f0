package nemesis_test

import (
	"fmt"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// TestFault_DropUnlock: the drop-unlock scenario's run (2 clients
// taking turns on 1 key, --wait 2s) with the unlock messages Redis
// delivers to the waiters' subscriptions dropped on the wire.
// pubsub-wait, whose waiter polls every 250 ms besides, is valid with
// its figure met (unlock_dropped_waiting, counted on the connection
// where the message was cut, not timed); broken-wait-subscribe-after-try,
// woken by the message alone, sleeps on the freed key past its bound of
// 1 s: starved waiters, invalid. The same run configuration for both.
func TestFault_DropUnlock(t *testing.T) {
	testutil.RequireRedis(t)
	s, err := scenario.Lookup("drop-unlock")
	if err != nil {
		t.Fatal(err)
	}
	w := workload.Config{OpTimeout: 1e9, Wait: 2e9}
	s.Workload(&w)
	c := faultrun.Case{Workload: w, Scenario: s}
	figures := func(r *harness.Result) string {
		live, _ := r.Findings.Checker("liveness")
		return fmt.Sprintf("unlock_dropped_waiting %d, starved_waiters %d", r.Findings.Coverage[history.UnlockDroppedWaiting], live.Figures["starved_waiters"])
	}
	c.Expect(t, "pubsub-wait", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Valid, figures(r) })
	c.Expect(t, "broken-wait-subscribe-after-try", func(r *harness.Result) (bool, string) {
		live, _ := r.Findings.Checker("liveness")
		return r.Verdict == checker.Invalid && live.Figures["starved_waiters"] > 0, figures(r)
	})
}

// TestStallSpans_DropUnlockIsTheWakeFault: the starved-waiter check
// judges waiters through drop-unlock's windows, and through no other
// fault's, by its name: the checker's name for it is this fault's.
func TestStallSpans_DropUnlockIsTheWakeFault(t *testing.T) {
	if checker.WakeFault != nemesis.ClientDropUnlock {
		t.Fatalf("checker.WakeFault %q, the fault %q: the starved-waiter check would leave drop-unlock's windows out", checker.WakeFault, nemesis.ClientDropUnlock)
	}
}
