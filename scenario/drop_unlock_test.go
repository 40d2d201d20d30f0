package scenario

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestWakesByMessage: drop-unlock applies to a blocking run (--wait) of
// a lock whose waiters subscribe through lockcheck's client, requiring
// its figure, and is n/a with its reason for a run that does not wait,
// a lock with a client of its own, and one whose waiters poll.
func TestWakesByMessage(t *testing.T) {
	sub := ProfileOf(lockimpl.Entry{Name: "pubsub-wait", Subscribes: true}, cluster.Config{})
	sub.Blocking = true
	own := sub
	own.OwnClient = true
	polls := ProfileOf(lockimpl.Entry{Name: "setnx-block"}, cluster.Config{})
	polls.Blocking = true
	plain := ProfileOf(lockimpl.Entry{Name: "pubsub-wait", Subscribes: true}, cluster.Config{})
	for _, tc := range []struct {
		name string
		p    Profile
		want string // "" applies
	}{{"subscribing waiter", sub, ""}, {"own client", own, "client of its own"}, {"polling waiter", polls, "poll"}, {"no --wait", plain, "--wait"}} {
		_, na, req := dropUnlock.Fits(tc.p)
		if tc.want == "" {
			if na != "" || req[history.UnlockDroppedWaiting] == 0 {
				t.Errorf("%s: n/a %q, requires %v: want it to apply, requiring %s", tc.name, na, req, history.UnlockDroppedWaiting)
			}
			continue
		}
		if !strings.Contains(na, tc.want) {
			t.Errorf("%s: n/a %q, want one naming %q", tc.name, na, tc.want)
		}
	}
}
