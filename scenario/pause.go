package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// pause is pause: Kleppmann's GC pause, a holder stopped past its TTL.
var pause = Scenario{Name: "pause", Description: "pause-client: a holder stops 1.5 TTL (a GC pause) between its acquire and its write, then writes",
	Nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: 500 * time.Millisecond, Duration: 500 * time.Millisecond},
	Pauses:  true, Requires: checker.Coverage{checker.HeldPastTried: 3},
	Breaks: "no fencing token: a client paused past its TTL wrote after another acquired"}
