package scenario

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestClientClock_SemaphoreOnly: client-clock applies to a semaphore of
// k > 1 permits (requiring all_permits_tried beside its fault's hits)
// and is n/a for a mutex and a read-write lock, each with its reason.
func TestClientClock_SemaphoreOnly(t *testing.T) {
	s, err := Lookup("client-clock")
	if err != nil {
		t.Fatal(err)
	}
	p := ProfileOf(lockimpl.Entry{Name: "any"}, cluster.Config{})
	if _, na, _ := s.Fits(p); !strings.Contains(na, "a semaphore's scenario") {
		t.Errorf("client-clock for a mutex: n/a %q, want a semaphore's scenario", na)
	}
	p.Shape = ReadWrite
	if _, na, _ := s.Fits(p); !strings.Contains(na, "no figure counts a skewed reader") {
		t.Errorf("client-clock for a read-write lock: n/a %q, want why not a read-write lock's", na)
	}
	p.Shape, p.Permits = Semaphore, 3
	_, na, req := s.Fits(p)
	if na != "" || req[checker.AllPermitsTried] == 0 || req[checker.Hit("client-clock")] == 0 {
		t.Errorf("client-clock for a semaphore of 3: n/a %q, requires %v; want it to apply, with all_permits_tried and its hits", na, req)
	}
}
