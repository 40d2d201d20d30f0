package scenario

import (
	"github.com/lockcheck/lockcheck/history"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

// clockQuorum is clock-quorum: Kleppmann's Redlock clock jump on a bare majority.
var clockQuorum = onServer(Scenario{Name: "clock-quorum", Description: "Kleppmann: 2 of 5 masters down, then back empty while a node of the bare majority jumps 2 TTL forward",
	Nemesis: nemesis.Config{Faults: []string{"clock-quorum"}, Interval: time.Second, Duration: 2 * time.Second},
	Only:    []string{cluster.Redlock},
	Server:  true, Requires: checker.Coverage{checker.Hit("clock-quorum"): 2, history.ExpiredByClock: 2}, Breaks: "a bare majority lost a lease to one node's clock"})
