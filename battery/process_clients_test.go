package battery

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// TestVerifyRun_ProcessClients: contention and overrun run 20 clients
// for a lock run as a process per client (Scenario.ProcessWorkload), and
// overrun twice as long (12 s, 6 s otherwise), 200
// for any other lock and for a --lock-cmd lock's one process beside its
// lock for the client faults; the user's --clients still decides; the
// scenarios without a count of their own keep theirs.
func TestVerifyRun_ProcessClients(t *testing.T) {
	shared, per := harness.Config{Lock: "shared"}, harness.Config{Lock: "per-client"}
	perClient := scenario.Profile{PerClient: true}
	for _, c := range []struct {
		scenario string
		cfg      VerifyConfig
		p        scenario.Profile
		want     int
	}{
		{"overrun", VerifyConfig{Lock: per}, perClient, 20},
		{"contention", VerifyConfig{Lock: per}, perClient, 20},
		{"overrun", VerifyConfig{Lock: shared}, scenario.Profile{}, 200},
		{"contention", VerifyConfig{Lock: shared}, scenario.Profile{}, 200},
		// verify's profile says PerClient where it has a lock for the
		// client faults; overrun runs the one process.
		{"overrun", VerifyConfig{Lock: shared, ClientFaultLock: &per}, perClient, 200},
		{"overrun-free", VerifyConfig{Lock: per}, perClient, 20},
		{"pause", VerifyConfig{Lock: per}, perClient, scenario.Base.Clients},
	} {
		s, err := scenario.Lookup(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		w := verifyRun(c.cfg, s, "", c.p, 1, t.TempDir()).Workload
		if w.Clients != c.want {
			t.Errorf("%s, lock %s (per client %v): %d clients, want %d", c.scenario, c.cfg.Lock.Lock, c.p.PerClient, w.Clients, c.want)
		}
		// Sized for a process a client where it runs 20.
		if want := map[bool]time.Duration{false: 6 * time.Second, true: 12 * time.Second}[c.want == 20]; c.scenario == "overrun" && w.Duration != want {
			t.Errorf("overrun, lock %s (per client %v): runs %v, want %v", c.cfg.Lock.Lock, c.p.PerClient, w.Duration, want)
		}
	}
	user := VerifyConfig{Lock: per, Workload: func(w *workload.Config) { w.Clients = 50 }}
	s, _ := scenario.Lookup("overrun")
	if got := verifyRun(user, s, "", perClient, 1, t.TempDir()).Workload.Clients; got != 50 {
		t.Errorf("overrun with --clients 50, per client: %d clients, want 50", got)
	}
}
