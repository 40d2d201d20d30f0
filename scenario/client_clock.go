package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// clientClock is client-clock: the clocks some clients read go wrong
// while they take and give back a semaphore's permits. A lock that
// times its permits by Redis's clock does not notice; one that scores
// them by its client's clock lets a k + 1st holder in. Holds are short
// against the TTL, so that the clients' own wrong sense of their
// deadlines seldom carries a write past its lease; where it does, only
// fencing saves the resource, so mutual exclusion there is a finding
// unless --require fencing (as under pauses).
var clientClock = Scenario{Name: "client-clock", Description: "client-clock: the clocks of 3 clients (holders first) run slow (x0.5), jump back a TTL or run fast (x1.5) for 1 s in every 2, under 20 clients on 3 keys, holds of 0-20 ms under a 200 ms TTL: a semaphore that scores its permits by its client's clock lets them expire early",
	Workload: func(w *workload.Config) {
		w.Keys, w.Hold, w.HoldDist, w.Retry, w.Margin = 3, 10*time.Millisecond, workload.HoldUniform, workload.RetryNone, 0
	},
	Nemesis: nemesis.Config{Faults: []string{"client-clock"}, Interval: 2 * time.Second, Duration: time.Second},
	Pauses:  true, Needs: []Need{ofSemaphore, fillsPermits}, Requires: checker.Coverage{checker.Hit("client-clock"): 2},
	Breaks: "a client whose clock ran wrong stayed in its section past its lease: only fencing keeps the resource safe from it"}

// ofSemaphore: client-clock's chance is a skewed client among a
// semaphore's holders (its permits scored by one clock or another); a
// mutex's client clock is judged by TestFault_ClientClock.
func ofSemaphore(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	switch {
	case p.Shape == ReadWrite:
		return "a semaphore's scenario (--permits K, K > 1): its chance is a client whose clock runs wrong among the k holders of a key, and no figure counts a skewed reader while a writer tried", req
	case p.Permits <= 1:
		return "a semaphore's scenario (--permits K, K > 1): its chance is a client whose clock runs wrong among the k holders of a key", req
	}
	return "", req
}
