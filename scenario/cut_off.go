package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// cutOff is cut-off: holders cut off Redis while their leases run out.
var cutOff = Scenario{Name: "cut-off", Description: "client-partition: holders of 3 s, their 600 ms leases kept alive by extends every TTL/3, cut off Redis for 1 s: their extends time out and their leases run out while they hold",
	Workload: func(w *workload.Config) {
		w.Clients, w.Keys, w.TTL, w.Hold, w.HoldDist, w.OpTimeout = 20, 5, 600*time.Millisecond, 3*time.Second, workload.HoldFixed, 300*time.Millisecond
		w.Duration = 8 * time.Second
	},
	Nemesis: nemesis.Config{Faults: []string{"client-partition"}, Interval: time.Second, Duration: time.Second},
	Extends: true, Needs: []Need{extendsLeases}, RedlockClients: 20, Requires: checker.Coverage{checker.Hit("client-partition"): 3}}
