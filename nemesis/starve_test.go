package nemesis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// TestFault_Starve: holders' renewals are held back inside the client
// for 1.5 TTL while the holders work on. watchdog, whose holder leaves
// its section at its lease's end as last renewed, is valid with the
// figure met; broken-watchdog-no-loss-check, whose holder works on
// until a renewal fails, is still in its section when the key expired
// and another client took it: invalid. The same run configuration for
// both; a run counts once renewal_starved is met (counted in the
// client's hook, not timed).
func TestFault_Starve(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 20, Keys: 5, Duration: 8 * time.Second, TTL: 500 * time.Millisecond, Hold: time.Second, HoldDist: workload.HoldFixed, OpTimeout: time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"starve"}, Interval: time.Second, Duration: 1500 * time.Millisecond},
		Requires: checker.Coverage{history.RenewalStarved: 5}}}
	figures := func(r *harness.Result) string {
		return fmt.Sprintf("renewal_starved %d, double holders %d", r.Findings.Coverage[history.RenewalStarved], faultrun.DoubleHolders(r))
	}
	s.Expect(t, "watchdog", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Valid, figures(r) })
	s.Expect(t, "broken-watchdog-no-loss-check", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Invalid, figures(r) })
}
