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

// TestFault_Cancel: ops are cancelled while Redis's reply to them is
// held on their connection, and the reply then arrives down it. setnx,
// whose go-redis client reads on through a cancel (it watches a
// context's deadline, not its cancel), reads its own reply late and
// reuses the connection: valid, with both figures met.
// broken-cancel-keep, whose client gives up on the read and keeps the
// connection, reads the late reply as its next command's: invalid. The
// same run configuration for both; a run counts once both figures are
// met (counted on the connections, not timed).
func TestFault_Cancel(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 20, Keys: 5, Duration: 6 * time.Second, TTL: time.Second, Hold: 50 * time.Millisecond, OpTimeout: time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"cancel"}, Interval: time.Second, Duration: 500 * time.Millisecond},
		Requires: checker.Coverage{history.CancelledApplied: 5, history.SentBehindCancel: 5}}}
	figures := func(r *harness.Result) string {
		return fmt.Sprintf("cancelled_applied %d, sent_behind_cancel %d", r.Findings.Coverage[history.CancelledApplied], r.Findings.Coverage[history.SentBehindCancel])
	}
	s.Expect(t, "setnx", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Valid, figures(r) })
	s.Expect(t, "broken-cancel-keep", func(r *harness.Result) (bool, string) { return r.Verdict == checker.Invalid, figures(r) })
}
