package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// killEverysec is kill-everysec: the host's crash under appendfsync
// everysec, a restart that loses the last second of writes (kill-redis
// cuts the AOF back to where it ended a second before the kill).
var killEverysec = Scenario{Name: "kill-everysec", Description: "kill-redis as a power loss: restarted at once with appendfsync everysec, its AOF cut back to where it ended a second before the kill", Workload: serverWorkload,
	Nemesis: killEvery, Persistence: "aof-everysec",
	Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3, history.UnsyncedAtKill: 3}, Breaks: "a restart lost the last second of writes, held locks among them"}
