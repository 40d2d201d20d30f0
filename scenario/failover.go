package scenario

import (
	"github.com/lockcheck/lockcheck/history"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// failover is failover: Sentinel promotes a replica that lags.
var failover = Scenario{Name: "failover", Description: "sentinel: kill the master with replication 500 ms behind; a replica is promoted",
	Nemesis:  nemesis.Config{Faults: []string{"failover"}, Interval: 3 * time.Second, Duration: 6 * time.Second},
	Topology: cluster.Sentinel, ReplicationLag: 500 * time.Millisecond, Workload: laggedWorkload,
	Server: true, Requires: checker.Coverage{history.LostAtPromotion: 1}, Breaks: "the promoted replica had not received held locks"}

// failoverWorkload is the sentinel scenarios' workload: leases of 10 s
// held 3 s on 40 keys, so that a promotion finds leases live.
func failoverWorkload(w *workload.Config) {
	w.TTL, w.Hold, w.Keys, w.Duration = 10*time.Second, 3*time.Second, 40, 12*time.Second
}

// laggedWorkload is failover's: failoverWorkload with an op timeout of
// 2 s, so that a lock that waits for its replicas (WAIT, up to half the
// op timeout) hears them through the 500 ms replication lag; with the
// base 500 ms setnx-wait-all's every acquire ended indeterminate and
// failover was never exercised. partition keeps the base: a longer WAIT
// on the deposed master made broken-wait-ignored's grants there so slow
// that a run met granted_both_sides without two holders in its history.
func laggedWorkload(w *workload.Config) {
	failoverWorkload(w)
	w.OpTimeout = 2 * time.Second
}
