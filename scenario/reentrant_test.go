package scenario

import (
	"strings"
	"testing"
)

// TestReentrant_ExtendsNA: a reentrant lock's run (--reenter) is n/a in
// the scenarios whose holders are kept alive by client-side extends,
// saying why, unless the lock renews its leases itself; its other
// scenarios, and a mutex's, apply.
func TestReentrant_ExtendsNA(t *testing.T) {
	re := Profile{Name: "reentrant", Shape: Reentrant, Permits: 1}
	if _, na, _ := extend.Fits(re); !strings.Contains(na, "re-enter") {
		t.Errorf("extend for a reentrant lock: n/a %q, want the re-entries named", na)
	}
	if _, na, _ := contention.Fits(re); na != "" {
		t.Errorf("contention for a reentrant lock: n/a %q, want it to apply", na)
	}
	renews := re
	renews.Renews = true
	mutex := Profile{Name: "setnx", Shape: Mutex, Permits: 1}
	for _, p := range []Profile{renews, mutex} {
		if _, na, _ := extend.Fits(p); na != "" {
			t.Errorf("extend for %+v: n/a %q, want it to apply", p, na)
		}
	}
}
