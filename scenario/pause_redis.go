package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// pauseRedis is pause-redis: Redis stalls, acquires end indeterminate.
var pauseRedis = Scenario{Name: "pause-redis", Description: "Redis stops for 1 s every 2 s under 20 clients on 3 keys: acquires time out (indeterminate), and those queued run when it resumes",
	Workload: stallWorkload, Nemesis: nemesis.Config{Faults: []string{"pause-redis"}, Interval: 2 * time.Second, Duration: time.Second},
	Requires: checker.Coverage{checker.InfoContended: 20, checker.Hit("pause-redis"): 2}}
