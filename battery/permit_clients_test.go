package battery

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
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

// TestVerifyRun_ReadersLeaveGaps: at contention a read-write lock's
// clients think (readers a key - 1) / 2 mean holds between tries, so
// that writers get the key (scenario.readersLeaveGaps): 100 clients half
// readers on 5 keys, 10 readers a key, think 4.5 holds of 10 ms; a key of
// one reader (10 clients) and a mutex think none; a think the user set
// is kept; another scenario is left as it is.
func TestVerifyRun_ReadersLeaveGaps(t *testing.T) {
	rw := scenario.Profile{Shape: scenario.ReadWrite, Permits: 1}
	half := func(clients int, think time.Duration) func(*workload.Config) {
		return func(w *workload.Config) { w.Readers, w.Think, w.Clients = 0.5, think, min(w.Clients, clients) }
	}
	for _, c := range []struct {
		scenario string
		p        scenario.Profile
		adjust   func(*workload.Config)
		want     time.Duration
	}{
		{"contention", rw, half(1000, 0), 45 * time.Millisecond},
		{"contention", rw, half(10, 0), 0},
		{"contention", rw, half(1000, 3*time.Millisecond), 3 * time.Millisecond},
		{"contention", scenario.Profile{Permits: 1}, nil, 0},
		{"crash", rw, half(1000, 0), 0},
	} {
		s, err := scenario.Lookup(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		cfg := VerifyConfig{Lock: harness.Config{Lock: "rwlock"}, Workload: c.adjust}
		if w := verifyRun(cfg, s, "", c.p, 1, t.TempDir()).Workload; w.Think != c.want {
			t.Errorf("%s, %d clients, readers %v: think %v, want %v", c.scenario, w.Clients, w.Readers, w.Think, c.want)
		}
	}
}
