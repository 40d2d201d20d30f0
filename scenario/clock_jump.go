package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// clockJump is clock-jump: a node's clock jumps 2 TTL forward.
var clockJump = Scenario{Name: "clock-jump", Description: "a node's clock jumps 2 TTL forward: its keys expire at once", Workload: serverWorkload,
	Nemesis: nemesis.Config{Faults: []string{"clock-jump"}, Interval: 1500 * time.Millisecond, Duration: time.Second},
	Server:  true, Requires: checker.Coverage{checker.Hit("clock-jump"): 3}, Breaks: "a clock jump expired held locks early"}
