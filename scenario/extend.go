package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// extend is extend: overdue extends onto free keys and keys another holds.
var extend = Scenario{Name: "extend", Description: "3 clients per key and 2 on keys of their own, holds of 1 s kept alive by extends every TTL/3, pause-holder, and the 2 stopped past the TTL in every other hold: overdue extends onto free keys and keys another holds",
	Workload: func(w *workload.Config) {
		w.Clients, w.Keys, w.TTL, w.Hold, w.HoldDist, w.Margin = 14, 4, 300*time.Millisecond, time.Second, workload.HoldFixed, 60*time.Millisecond
		w.SoloKeys = 2 // late extends onto free keys, on purpose (workload.Config.SoloKeys)
		w.Duration = 8 * time.Second
	},
	Nemesis: nemesis.Config{Faults: []string{"pause-holder"}, Interval: 300 * time.Millisecond, Duration: 300 * time.Millisecond},
	Extends: true, Needs: []Need{extendsLeases}, RedlockClients: 8, Requires: checker.Coverage{checker.LateExtendFree: 3, checker.LateExtendTaken: 3}}

// extendsLeases is what the scenarios whose holders keep their leases
// alive by extends (Extends) need of a lock: an extend, or its own
// renewals. A lease with a deadline and no extend would break by the
// workload's long holds alone; a scope (a lease held by a connection, a
// subscription) has no deadline, and a fault that cuts its holder off or
// kills its node is where it is in danger: it meets the scenario unless
// the figures count extends.
func extendsLeases(s Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.NoExtend && !p.Renews && (p.Deadline() || extendFigures(s.Requires)) {
		return "the lock has no extend and renews nothing itself", req
	}
	return "", req
}

// extendFigures says whether req counts extends (late ones): a lock
// without extend can never give them.
func extendFigures(req checker.Coverage) bool {
	return req[checker.LateExtendFree] > 0 || req[checker.LateExtendTaken] > 0
}
