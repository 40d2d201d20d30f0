package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// overrun is overrun: releases after expiry onto keys another holds. A
// lock run as a process per client gets 20 clients (4 a key, still
// racing for each key a late release lands on) for twice as long: 200
// processes of redis-py's Lock took most of a 5 min battery's overrun
// share to start (late_release_taken 1 of 15 after 2 runs); 20 for 6 s
// met 18/15 on a quiet machine and 12/15 beside other work (one run each:
// a battery that outlasts its budget gets no second), and the run's time
// costs nothing to start. A semaphore gets 40 clients (8 a key): at 200
// its model, with the refusals surelyRefused leaves (2,300 to 2,700 a
// key: late releases leave fewer than k surely held), decided 1 key of 5
// in 120 s; at 60 all 5 in 32 s (late_release_taken 117/15). A
// reentrant lock (--reenter 3) gets 40 too: at 200 its model left the
// run unknown after 120 s (of two keys tried alone, one decided in 6 ms,
// one not in 20 s); at 40 it decided all 5 and the run passed in 10 s
// (late_release_taken 58/15).
var overrun = Scenario{Name: "overrun", Description: "200 clients on 5 keys (20 for a lock of a process per client, 40 for a semaphore or a reentrant lock: its model's time), holds of 0-200 ms under a 100 ms TTL: releases after expiry onto keys another holds, racing its acquire",
	Workload: func(w *workload.Config) {
		w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry = 200, 100*time.Millisecond, 100*time.Millisecond, workload.HoldUniform, workload.RetryNone
	},
	Overrun: true, Needs: []Need{releasesLate}, RedlockClients: 20, ProcessWorkload: processOverrun, PermitClients: 40, Requires: checker.Coverage{checker.LateReleaseTaken: 15}}

// processOverrun is overrun's workload for a lock run as a process per
// client: 20 clients, twice as long.
func processOverrun(w *workload.Config) { w.Clients, w.Duration = min(w.Clients, 20), 2*w.Duration }

// releasesLate is what the scenarios of late releases (Overrun) need of
// a lock: releases that can come late, which a lock that keeps its
// leases alive itself never makes.
func releasesLate(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Renews {
		return "the lock extends its leases itself: its releases are never late", req
	}
	return "", req
}
