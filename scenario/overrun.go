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
	Overrun: true, Needs: []Need{releasesLate}, RedlockClients: 20, Requires: checker.Coverage{checker.LateReleaseTaken: 15}}

// releasesLate is what the scenarios of late releases (Overrun) need of
// a lock: releases that can come late, which a lock that keeps its
// leases alive itself never makes.
func releasesLate(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Renews {
		return "the lock extends its leases itself: its releases are never late", req
	}
	return "", req
}
