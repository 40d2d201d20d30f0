package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// cancelOps is cancel: ops cancelled after their command reached Redis,
// their replies arriving late down connections the client may keep.
var cancelOps = Scenario{Name: "cancel", Description: "cancel: the acquires and releases of 3 clients are cancelled while Redis's reply to them is held on the wire, then the reply arrives on the same connection, under 20 clients on 3 keys: a client that keeps the connection without reading it reads it as its next command's",
	Workload: func(w *workload.Config) { w.Keys, w.Duration = 3, 8*time.Second },
	Nemesis:  nemesis.Config{Faults: []string{"cancel"}, Interval: time.Second, Duration: 500 * time.Millisecond},
	Needs:    []Need{takesClient},
	Requires: checker.Coverage{history.CancelledApplied: 10, history.SentBehindCancel: 10}}

// takesClient is what cancel needs of a lock: lockcheck's Redis client,
// inside which the fault cancels the op and holds its reply. A lock with
// a client of its own is n/a: here a process per client (one process for
// all its clients is n/a already by TopologyFor, as at every fault
// inside lockcheck's client), until the lock-process protocol can cancel
// a request.
func takesClient(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.OwnClient {
		return "its fault cancels ops inside lockcheck's own Redis client, which the lock does not use (it has a client of its own); a lock process would need a cancel message in the lock-process protocol, which does not exist yet", req
	}
	return "", req
}
