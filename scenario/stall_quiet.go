package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// stallQuiet is stall-quiet: a stall, then quiet longer than a late lease could last.
var stallQuiet = Scenario{Name: "stall-quiet", Description: "Redis stops for 1 s every 4 s under 20 clients on 10 keys, quiet in between for longer than an indeterminate acquire's lease could last: a key that an acquire queued in the stall took must come free after it",
	Workload: func(w *workload.Config) { w.Keys, w.Duration = 10, 10*time.Second },
	Nemesis:  nemesis.Config{Faults: []string{"pause-redis"}, Interval: 3 * time.Second, Duration: time.Second},
	Requires: checker.Coverage{checker.InfoSettled: 2}}
