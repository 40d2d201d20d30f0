package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// overrun is overrun: releases after expiry onto keys another holds.
var overrun = Scenario{Name: "overrun", Description: "200 clients on 5 keys, holds of 0-200 ms under a 100 ms TTL: releases after expiry onto keys another holds, racing its acquire",
	Workload: func(w *workload.Config) {
		w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry = 200, 100*time.Millisecond, 100*time.Millisecond, workload.HoldUniform, workload.RetryNone
	},
	Overrun: true, RedlockClients: 20, Requires: checker.Coverage{checker.LateReleaseTaken: 15}}
