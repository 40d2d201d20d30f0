package battery_test

import (
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// reenter3 is the reentrant lock's workload for verify: every holder
// re-enters to depth 3 and writes in each section on its way out.
func reenter3(w *workload.Config) { w.Reenter = 3 }

// TestVerify_ReentrantBothWays: the reentrant lock, judged by its own
// model under one run configuration (--reenter 3): the correct one
// passes contention and crash; a release that deletes the key whatever
// the count, and an acquire that takes a held key as a re-entry without
// asking whose it is, each break at contention.
func TestVerify_ReentrantBothWays(t *testing.T) {
	testutil.RequireRedis(t)
	bothWaysCases(t, reenter3, []shapeCase{
		{lock: "reentrant", scenarios: []string{"contention", "crash"}, want: []string{report.StatusPassed, report.StatusPassed}},
		{lock: "broken-reentrant-release-deletes", scenarios: []string{"contention"}, want: []string{report.StatusBroken}},
		{lock: "broken-reentrant-no-owner-check", scenarios: []string{"pause"}, want: []string{report.StatusBroken}},
	})
	testutil.NoRedisChildren(t)
}
