package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// starve is starve: renewals starved inside the client, their holders
// working on.
var starve = Scenario{Name: "starve", Description: "starve: holds of 1 s under a 500 ms TTL kept alive by renewals every TTL/3, 20 clients on 5 keys, and the renewals of 8 clients held back inside the client for 1.5 TTL while their holders work on: a holder that trusts its renewal is still in its section when the key expires and another takes it",
	Workload: func(w *workload.Config) {
		w.TTL, w.Hold, w.HoldDist, w.Margin, w.OpTimeout, w.Duration = 500*time.Millisecond, time.Second, workload.HoldFixed, 50*time.Millisecond, time.Second, 8*time.Second
	},
	Nemesis: nemesis.Config{Faults: []string{"starve"}, Interval: time.Second, Duration: 1500 * time.Millisecond},
	Extends: true, Needs: []Need{renewsInClient, extendsLeases},
	Requires: checker.Coverage{history.RenewalStarved: 5}}

// renewsInClient is what starve needs of a lock: its renewals sent
// through lockcheck's Redis client, in whose go-redis hook the fault
// holds them back (cancel's takesClient, with starve's reason). A lock
// with a client of its own is n/a: a lock process would be starved by a
// duty cycle of stops, which the fault does not play yet.
func renewsInClient(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.OwnClient {
		return "its fault holds renewals back inside lockcheck's own Redis client, which the lock does not use (it has a client of its own); a lock process would be starved by a duty cycle of stops, which starve does not play yet", req
	}
	return "", req
}
