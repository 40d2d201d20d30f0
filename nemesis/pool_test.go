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

// TestFault_Pool: each client has a lock of its own over a pool of two
// connections, and as a targeted client enters its section the
// application's blocking reads take both for 1.5 TTL. watchdog, whose
// renewal gives up within TTL/3 and whose holder leaves at its lease's
// end, is valid with the figure met; broken-watchdog-pool-wait, whose
// renewal waits for a connection as long as go-redis lets it and whose
// holder trusts it, is still in its section when the key expired and
// another client took it: invalid. The same run configuration for both;
// a run counts once renewal_pool_wait is met (noted in the client's hook,
// counted when the pool comes free, not timed).
func TestFault_Pool(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 20, Keys: 5, Duration: 8 * time.Second, TTL: 500 * time.Millisecond, Hold: time.Second, HoldDist: workload.HoldFixed,
		OpTimeout: time.Second, PoolPerClient: 2}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{nemesis.ClientPool}, Interval: time.Second, Duration: 1500 * time.Millisecond},
		Requires: checker.Coverage{history.RenewalPoolWait: 5}}}
	figures := func(r *harness.Result) string {
		return fmt.Sprintf("renewal_pool_wait %d, double holders %d", r.Findings.Coverage[history.RenewalPoolWait], faultrun.DoubleHolders(r))
	}
	s.Expect(t, "watchdog", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Valid, figures(r) })
	s.Expect(t, "broken-watchdog-pool-wait", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Invalid, figures(r) })
}
