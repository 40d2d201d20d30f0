package scenario

import (
	"github.com/lockcheck/lockcheck/history"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// killQuorum is kill-quorum: redsync #186. Leases of 6 s held 4 s on 10 keys: a
// lease taken before the window is on a bare majority once two nodes are
// down, and on two nodes after half-time; a client's pool refuses new
// connections to a restarted node for a second after it saw it refuse
// one (go-redis's dial back-off), so the lease's holder must still hold
// it more than a second after half-time for the empty nodes to be won
// meanwhile.
var killQuorum = onServer(Scenario{Name: "kill-quorum", Description: "redsync #186: 2 of 5 masters down, then back empty while a node of the bare majority restarts without persistence; leases of 6 s held 4 s on 10 keys",
	Nemesis: nemesis.Config{Faults: []string{"kill-quorum"}, Interval: time.Second, Duration: 2 * time.Second},
	Only:    []string{cluster.Redlock}, Persistence: "none",
	Workload: func(w *workload.Config) {
		w.Keys, w.TTL, w.Hold, w.HoldDist, w.Duration = 10, 6*time.Second, 4*time.Second, workload.HoldFixed, 12*time.Second
	},
	Server: true, Requires: checker.Coverage{checker.Hit("kill-quorum"): 2, history.LostAtRestart: 2}, Breaks: "a bare majority lost a lease to one node's restart without persistence"})
