package battery_test

import (
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// semaphoreOf3 is the semaphore's workload for verify: 3 permits a key,
// and at most 30 clients (CI's time: verify itself runs contention's 200,
// whose refusals surelyRefused drops enough of for its model to decide).
func semaphoreOf3(w *workload.Config) { w.Permits, w.Clients = 3, min(w.Clients, 30) }

// TestVerify_SemaphoreBothWays: the semaphore of 3 permits, judged by its
// own model under one run configuration: the correct one passes
// contention (all_permits_tried met), crash and client-clock; a count
// and an add in two commands over-admits at contention; a counter leaks
// a crashed holder's permit at crash (refusals with fewer than 3 held;
// crash's crashed_full met both ways: a holder crashed while the key was
// full);
// permits scored by the client's clock expire early at client-clock.
func TestVerify_SemaphoreBothWays(t *testing.T) {
	testutil.RequireRedis(t)
	bothWaysCases(t, semaphoreOf3, []shapeCase{
		{lock: "semaphore", scenarios: []string{"contention", "crash", "client-clock"}, want: []string{report.StatusPassed, report.StatusPassed, report.StatusPassed}},
		{lock: "broken-semaphore-check-add", scenarios: []string{"contention"}, want: []string{report.StatusBroken}},
		{lock: "broken-semaphore-counter", scenarios: []string{"crash"}, want: []string{report.StatusBroken}},
		{lock: "broken-semaphore-client-clock", scenarios: []string{"client-clock"}, want: []string{report.StatusBroken}},
	})
	testutil.NoRedisChildren(t)
}
