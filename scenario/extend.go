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
	Extends: true, RedlockClients: 8, Requires: checker.Coverage{checker.LateExtendFree: 3, checker.LateExtendTaken: 3}}
