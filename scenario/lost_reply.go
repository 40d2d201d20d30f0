package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// lostReply is lost-reply: replies lost after Redis applied the command.
var lostReply = Scenario{Name: "lost-reply", Description: "replies lost after Redis applied the command, under 20 clients on 3 keys: acquires that took effect end indeterminate, or are resent: its chance is the replies dropped on the wire, or indeterminate acquires on contended keys",
	Workload: stallWorkload, Nemesis: nemesis.Config{Faults: []string{"lost-reply"}, Interval: time.Second, Duration: time.Second},
	Requires: checker.Coverage{checker.AnyOf(checker.InfoContended, history.LostReply): 10}}
