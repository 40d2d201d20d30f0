package scenario

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestWaitsUnwatched: a blocking lock's run (--wait) finds every
// scenario that keeps leases alive by client-side extends n/a, with its
// reason, unless the lock renews them itself; every other scenario, and
// every scenario of a lock that does not wait, is decided as before
// (but drop-unlock, which needs a waiter).
func TestWaitsUnwatched(t *testing.T) {
	plain := ProfileOf(lockimpl.Entry{Name: "setnx-block"}, cluster.Config{})
	blocking := plain
	blocking.Blocking = true
	renewing := blocking
	renewing.Renews = true
	extends := 0
	for _, s := range All() {
		_, naBlocking, _ := s.Fits(blocking)
		_, naPlain, _ := s.Fits(plain)
		_, naRenewing, _ := s.Fits(renewing)
		wantNA := s.Extends && naPlain == ""
		if got := strings.Contains(naBlocking, "--wait"); got != wantNA {
			t.Errorf("%s: n/a for a blocking lock %q, want n/a by --wait %v", s.Name, naBlocking, wantNA)
		}
		if !s.Extends && naBlocking != naPlain && s.Name != dropUnlock.Name { // drop-unlock is for waiters alone (TestWakesByMessage)
			t.Errorf("%s (no extends): n/a %q for a blocking lock, %q for one that does not wait: want the same", s.Name, naBlocking, naPlain)
		}
		if strings.Contains(naRenewing, "--wait") {
			t.Errorf("%s: n/a for a blocking lock that renews its leases itself: %q", s.Name, naRenewing)
		}
		if wantNA {
			extends++
		}
	}
	if extends == 0 {
		t.Error("no scenario keeps leases alive by extends: the test proves nothing")
	}
}
