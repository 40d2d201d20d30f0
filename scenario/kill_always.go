package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
)

// killAlways is kill-always: a restart with every write on disk.
var killAlways = Scenario{Name: "kill-always", Description: "kill-redis, restarted at once with appendfsync always", Workload: serverWorkload,
	Nemesis: killEvery, Persistence: "aof-always",
	Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3}, Breaks: "a restart with every write on disk still broke the lock"}
