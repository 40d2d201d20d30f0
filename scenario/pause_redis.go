package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

// pauseRedis is pause-redis: Redis stalls, acquires end indeterminate.
var pauseRedis = Scenario{Name: "pause-redis", Description: "Redis stops for 1 s every 2 s under 20 clients on 3 keys: acquires time out (indeterminate), and those queued run when it resumes",
	Workload: stallWorkload, Nemesis: nemesis.Config{Faults: []string{"pause-redis"}, Interval: 2 * time.Second, Duration: time.Second},
	Needs: []Need{recordsRefusals}, Requires: checker.Coverage{checker.InfoContended: 20, checker.Hit("pause-redis"): 2}}

// recordsRefusals is what a scenario that requires info_contended needs
// of a lock: refusals it records, which a Redlock never does.
func recordsRefusals(s Scenario, _ Profile, topo string, req checker.Coverage) (string, checker.Coverage) {
	if topo == cluster.Redlock && s.Requires[checker.InfoContended] > 0 {
		return RedlockNoRefusals, req
	}
	return "", req
}

// RedlockNoRefusals is why a Redlock cannot meet info_contended: its
// attempts that found the key taken are undone (no majority either way,
// lockimpl.ErrUndone), never recorded, and the figure counts
// indeterminate acquires against recorded refusals; a phantom holder's
// refusals (what the scenario exists to catch) are undone as well, so
// no run could show them.
const RedlockNoRefusals = "a Redlock's refused attempts are undone (no majority either way) and never recorded: this scenario counts indeterminate acquires against recorded refusals, and a phantom holder's would be undone too"
