package battery

import (
	"testing"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/scenario"
)

// TestVerifyRun_PermitClients: overrun runs 40 clients for a semaphore
// or a read-write lock and contention 100 (Scenario.PermitClients: its model's time), both 200
// for a mutex.
func TestVerifyRun_PermitClients(t *testing.T) {
	sem := scenario.Profile{Shape: scenario.Semaphore, Permits: 3}
	rw := scenario.Profile{Shape: scenario.ReadWrite, Permits: 1}
	for _, c := range []struct {
		scenario string
		p        scenario.Profile
		want     int
	}{
		{"overrun", sem, 40},
		{"overrun", scenario.Profile{Permits: 1}, 200},
		{"contention", sem, 100},
		{"contention", scenario.Profile{Permits: 1}, 200},
		{"contention", rw, 100},
		{"overrun", rw, 40},
	} {
		s, err := scenario.Lookup(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		if w := verifyRun(VerifyConfig{Lock: harness.Config{Lock: "semaphore"}}, s, "", c.p, 1, t.TempDir()).Workload; w.Clients != c.want {
			t.Errorf("%s, permits %d: %d clients, want %d", c.scenario, c.p.Permits, w.Clients, c.want)
		}
	}
}
