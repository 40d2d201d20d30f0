package battery_test

import (
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// readersHalf is the read-write lock's workload for verify: half its
// acquires reads, and at most 10 clients. Contention's 200 (verify's
// own), or even 20, hold a key with more readers at once than the
// model decides within the check's deadline: the run is unknown.
func readersHalf(w *workload.Config) { w.Readers, w.Clients = 0.5, min(w.Clients, 10) }

// TestVerify_ReadWriteBothWays: the read-write lock, half its acquires
// reads, judged by its own model under one run configuration: the
// correct one passes contention (writer_tried_over_readers and
// reader_tried_over_writer met) and crash; a writer that checks only
// for another writer, and readers that check for no writer, each break
// at contention.
func TestVerify_ReadWriteBothWays(t *testing.T) {
	testutil.RequireRedis(t)
	bothWaysCases(t, readersHalf, []shapeCase{
		{lock: "rwlock", scenarios: []string{"contention", "crash"}, want: []string{report.StatusPassed, report.StatusPassed}},
		{lock: "broken-rwlock-writer-ignores-readers", scenarios: []string{"contention"}, want: []string{report.StatusBroken}},
		{lock: "broken-rwlock-readers-ignore-writer", scenarios: []string{"contention"}, want: []string{report.StatusBroken}},
	})
	testutil.NoRedisChildren(t)
}
