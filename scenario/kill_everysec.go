package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
)

// killEverysec is kill-everysec: a restart that loses the last second of writes.
var killEverysec = Scenario{Name: "kill-everysec", Description: "kill-redis, restarted at once with appendfsync everysec", Workload: serverWorkload,
	Nemesis: killEvery, Persistence: "aof-everysec",
	Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3}, Breaks: "a restart lost the last second of writes, held locks among them"}
