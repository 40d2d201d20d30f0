package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// killDelayed is kill-delayed: kill-redis every 1.5 s, each node restarted
// without persistence once every lease it held (of a second) has expired.
var killDelayed = onServer(Scenario{Name: "kill-delayed", Description: "kill-redis, restarted without persistence after TTL + 500 ms (one node down at a time)",
	Nemesis: killEvery, Persistence: "none", RestartDelay: time.Second + 500*time.Millisecond,
	Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 2}, Breaks: "a node that stayed down longer than the TTL still broke the lock"})
