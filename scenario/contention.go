package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// contention is contention: races between acquires.
var contention = Scenario{Name: "contention", Description: "200 clients on 5 keys, holds of 0-20 ms under a 1 s TTL: races between acquires",
	Workload: func(w *workload.Config) {
		w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry, w.Margin = 200, time.Second, 10*time.Millisecond, workload.HoldUniform, workload.RetryNone, 0
	},
	Requires: checker.Coverage{checker.Contended: 2000}}
