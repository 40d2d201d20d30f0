package scenario

import (
	"github.com/lockcheck/lockcheck/history"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

// partition is partition: split brain on sentinel.
var partition = Scenario{Name: "partition", Description: "sentinel: the master cut off from its replicas and sentinels while clients still reach it; a replica is promoted (split brain)",
	Nemesis:  nemesis.Config{Faults: []string{"partition"}, Interval: 3 * time.Second, Duration: 6 * time.Second},
	Topology: cluster.Sentinel, Workload: failoverWorkload,
	Server: true, Requires: checker.Coverage{checker.AnyOf(history.GrantedBothSides, history.LostRetaken): 1}, Breaks: "both sides of the split brain granted the same lock"}
