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
	for _, tc := range []struct {
		lock      string
		scenarios []string
		want      []string
	}{
		{lock: "reentrant", scenarios: []string{"contention", "crash"}, want: []string{report.StatusPassed, report.StatusPassed}},
		{lock: "broken-reentrant-release-deletes", scenarios: []string{"contention"}, want: []string{report.StatusBroken}},
		{lock: "broken-reentrant-no-owner-check", scenarios: []string{"pause"}, want: []string{report.StatusBroken}},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			want := map[string]string{}
			for i, s := range tc.scenarios {
				want[s] = tc.want[i]
			}
			left := tc.scenarios
			for attempt := int64(0); attempt < 3 && len(left) > 0; attempt++ {
				left = bothWays(t, tc.lock, reenter3, left, want, 1+1000*attempt, attempt == 2)
			}
		})
	}
	testutil.NoRedisChildren(t)
}
