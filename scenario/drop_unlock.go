package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// dropUnlock is drop-unlock: a blocking lock's unlock messages lost on
// the wire while its waiters wait (the lost wake-up of Redisson's
// tracker). Two clients on one key take turns: each holds 1.5 s, thinks
// 1.2 s and comes back, so that the other is waiting at each release,
// and a release whose message is lost leaves the key free for the think
// (past a wake-up bound of 1 s) while a waiter sleeps, unless it polls.
// The fault is on for 3 s of every 3.2 s.
var dropUnlock = Scenario{Name: "drop-unlock", Description: "drop-unlock: blocking acquires (--wait) of 2 clients on 1 key, holds of 1.5 s and thinks of 1.2 s, while the unlock messages Redis delivers to the waiters' subscriptions are dropped on the wire (their connection cut): a waiter woken only by the message sleeps on a free key past its lock's wake-up bound, one that also polls wakes",
	Workload: func(w *workload.Config) {
		w.Clients, w.Keys, w.TTL, w.Hold, w.HoldDist, w.Think, w.Duration = 2, 1, 3*time.Second, 1500*time.Millisecond, workload.HoldFixed, 1200*time.Millisecond, 12*time.Second
	},
	Nemesis:  nemesis.Config{Faults: []string{nemesis.ClientDropUnlock}, Interval: 200 * time.Millisecond, Duration: 3 * time.Second},
	Needs:    []Need{wakesByMessage},
	Requires: checker.Coverage{history.UnlockDroppedWaiting: 3}}

// wakesByMessage is what drop-unlock needs of a lock: acquires that wait
// (--wait), by waiters that subscribe (through lockcheck's client, whose
// connections the fault cuts: a lock with a client of its own is n/a by
// the fault's own need, as for every fault inside the client).
func wakesByMessage(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	switch {
	case !p.Blocking:
		return "its acquires do not wait (run verify with --wait on a blocking lock): no waiter has an unlock message to lose", req
	case !p.Subscribes:
		return "its waiters are woken by no message (they poll): there is no unlock message to lose", req
	}
	return "", req
}
