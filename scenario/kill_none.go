package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// killNone is kill-none: a restart without persistence.
var killNone = Scenario{Name: "kill-none", Description: "kill-redis, restarted at once without persistence", Workload: serverWorkload,
	Nemesis: killEvery, Persistence: "none",
	Server: true, Requires: checker.Coverage{checker.Hit("kill-redis"): 3, history.LostAtRestart: 3}, Breaks: "a restart without persistence forgot held locks"}
