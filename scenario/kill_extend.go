package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// killExtend is kill-extend: kill-delayed under holders that keep their leases
// alive: every lease live when a node goes down is extended while it is
// down (its holds of 3 s outlast the 1.5 s the node stays down, and
// extends come every TTL/3), so a lock whose extend mishandles a node
// that errs gets its chance at every kill that hits a lease.
var killExtend = onServer(Scenario{Name: "kill-extend", Description: "kill-redis, restarted without persistence after TTL + 500 ms, under holders of 3 s kept alive by extends every TTL/3: extends while a node is down",
	Nemesis: killEvery, Persistence: "none", RestartDelay: time.Second + 500*time.Millisecond,
	Workload: func(w *workload.Config) { w.Keys, w.Hold, w.HoldDist = 20, 3*time.Second, workload.HoldFixed },
	Server:   true, Extends: true, Needs: []Need{extendsLeases}, RedlockClients: 20, Requires: checker.Coverage{checker.Hit("kill-redis"): 2},
	Breaks: "a node down while held leases were extended broke the lock"})
