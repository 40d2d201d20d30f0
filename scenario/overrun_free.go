package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// overrunFree is overrun-free: releases after expiry onto free keys too.
var overrunFree = Scenario{Name: "overrun-free", Description: "20 clients on 50 keys (zipf), holds of 0-200 ms under a 100 ms TTL: releases after expiry onto free keys and keys another holds",
	Workload: func(w *workload.Config) {
		w.Clients, w.Keys, w.KeyDist, w.TTL, w.Hold, w.HoldDist, w.Retry = 20, 50, workload.KeyZipf, 100*time.Millisecond, 100*time.Millisecond, workload.HoldUniform, workload.RetryNone
	},
	Overrun: true, Needs: []Need{releasesLate}, Requires: checker.Coverage{checker.LateReleaseFree: 20, checker.LateReleaseTaken: 20}}
