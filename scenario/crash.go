package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// crash is crash: a holder dies and never releases.
var crash = Scenario{Name: "crash", Description: "crash-client: a holder dies between its acquire steps or before its release, and never releases",
	Nemesis:  nemesis.Config{Faults: []string{"crash-client"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond},
	Requires: checker.Coverage{checker.AbandonedTried: 3}, Needs: []Need{crashesFull}}
