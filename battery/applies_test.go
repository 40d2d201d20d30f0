package battery

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/scenario"
)

// applies is what lock e is to scenario s under cfg, as verify resolves
// its profile (verifyProfile), with its own renewals (ownWatchdog) and
// the scope its runs told (scope).
func applies(s scenario.Scenario, e lockimpl.Entry, cfg VerifyConfig, ownWatchdog bool, scope string) (topo, na string, req checker.Coverage) {
	p := verifyProfile(cfg, e)
	p.Renews = p.Renews || ownWatchdog
	p.Scope = scope
	return s.Fits(p)
}

// TestApplies_ScopedLock: a lock without extend is n/a at cut-off and
// kill-extend while its leases have deadlines (its long holds alone
// would break it), but a lock whose leases are scopes (held by a
// connection, a subscription) meets them: a holder cut off or a node
// killed is where it is in danger. extend stays n/a for it (its figures
// count extends). A scope lock's client faults ask for the chance, a
// holder stopped past its lease's nominal end while another tried its
// key (held_past_tried), never for the bug (stale_holder); where the
// fault stops only lockcheck's client, it is n/a.
func TestApplies_ScopedLock(t *testing.T) {
	get := func(name string) scenario.Scenario {
		s, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	setnx := lockimpl.Entry{Name: "setnx"}
	perClient := lockimpl.Entry{Name: "proc", PerClient: true}
	noExtend := VerifyConfig{NoExtend: true}
	for _, c := range []struct {
		name, scenario string
		e              lockimpl.Entry
		cfg            VerifyConfig
		scope          string
		na             bool
		req            checker.Coverage
	}{
		{"deadline, no extend, cut-off", "cut-off", setnx, noExtend, "", true, nil},
		{"deadline, no extend, kill-extend", "kill-extend", setnx, noExtend, "", true, nil},
		{"scope, no extend, cut-off", "cut-off", perClient, noExtend, "a subscription", false, checker.Coverage{checker.Hit("client-partition"): 3}},
		{"scope, no extend, kill-extend", "kill-extend", perClient, noExtend, "a subscription", false, checker.Coverage{checker.Hit("kill-redis"): 2}},
		{"scope, no extend, extend", "extend", perClient, noExtend, "a subscription", true, nil},
		{"scope, extend, process per client", "extend", perClient, VerifyConfig{}, "a scope", false, checker.Coverage{checker.HeldPastTried: 3}},
		{"scope, extend, lockcheck's client", "extend", setnx, VerifyConfig{}, "a scope", true, nil},
		{"scope, pause", "pause", perClient, VerifyConfig{}, "a scope", false, checker.Coverage{checker.HeldPastTried: 3}},
	} {
		_, na, req := applies(get(c.scenario), c.e, c.cfg, false, c.scope)
		if (na != "") != c.na {
			t.Errorf("%s: n/a %q, want n/a %v", c.name, na, c.na)
		}
		if !c.na && !maps.Equal(req, c.req) {
			t.Errorf("%s: requires %v, want %v", c.name, req, c.req)
		}
		if req[checker.StaleHolder] > 0 {
			t.Errorf("%s: requires stale_holder, the bug itself", c.name)
		}
	}
}

// TestApplies_WhereTheFaultCannotReach: each scenario of a topology a
// lock cannot use is n/a for it with its reason (a lock of one node meets
// no failover, split brain or Redlock quorum; a Redlock no failover), and
// a lock that extends its own leases is n/a at the scenarios of late
// releases, where no release is late. Nothing runs.
func TestApplies_WhereTheFaultCannotReach(t *testing.T) {
	single := lockimpl.Entry{Name: "one-node", Topology: "single"}
	redlock := lockimpl.Entry{Name: "a-redlock", Topology: "redlock"}
	for _, c := range []struct {
		scenario    string
		e           lockimpl.Entry
		ownWatchdog bool
		want        string // the reason's words; "" runs
	}{
		{"failover", single, false, "needs topology sentinel; the lock needs single"},
		{"partition", single, false, "needs topology sentinel; the lock needs single"},
		{"partition-detect", single, false, "needs topology sentinel; the lock needs single"},
		{"failover", redlock, false, "needs topology sentinel; the lock needs redlock"},
		{"clock-quorum", single, false, "only for topology redlock"},
		{"kill-quorum", single, false, "only for topology redlock"},
		{"clock-quorum", redlock, false, ""},
		{"overrun", single, true, "extends its leases itself"},
		{"overrun-free", single, true, "extends its leases itself"},
		{"overrun-free", single, false, ""},
		{"failover", lockimpl.Entry{Name: "any"}, false, ""},
		{"cancel", single, false, ""},
		{"cancel", lockimpl.Entry{Name: "a-process-per-client", OwnClient: true, PerClient: true}, false, "the lock-process protocol"},
		{"cancel", lockimpl.Entry{Name: "one-process", OwnClient: true}, false, "inside lockcheck's own Redis client"},
		{"starve", single, false, ""},
		{"starve", single, true, ""},
		{"starve", lockimpl.Entry{Name: "a-process-per-client", OwnClient: true, PerClient: true}, false, "a duty cycle of stops"},
		{"starve", lockimpl.Entry{Name: "one-process", OwnClient: true}, false, "inside lockcheck's own Redis client"},
		{"pool", single, false, ""},
		{"pool", single, true, ""},
		{"pool", lockimpl.Entry{Name: "a-process-per-client", OwnClient: true, PerClient: true}, false, "told its pool's size in its environment"},
		{"pool", lockimpl.Entry{Name: "one-process", OwnClient: true}, false, "inside lockcheck's own Redis client"},
	} {
		s, err := scenario.Lookup(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		_, na, _ := applies(s, c.e, VerifyConfig{}, c.ownWatchdog, "")
		if (na == "") != (c.want == "") || !strings.Contains(na, c.want) {
			t.Errorf("%s for %s (own watchdog %v): n/a %q, want %q", c.scenario, c.e.Name, c.ownWatchdog, na, c.want)
		}
	}
	// The scenarios every lock meets on lockcheck's own servers (verify.md's
	// table of proofs says so): no topology, no watchdog makes them n/a.
	for _, name := range []string{"contention", "pause", "crash", "lost-reply", "kill-none", "kill-everysec", "kill-always", "kill-delayed", "clock-jump"} {
		s, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []lockimpl.Entry{single, redlock, {Name: "any"}, {Name: "sentinel", Topology: "sentinel"}} {
			for _, own := range []bool{false, true} {
				if _, na, _ := applies(s, e, VerifyConfig{}, own, ""); na != "" {
					t.Errorf("%s for %s (own watchdog %v): n/a %q; every lock meets it", name, e.Name, own, na)
				}
			}
		}
	}
}

// TestVerify_ExternalClientScenarios: verify on an external Redis (here a
// node lockcheck started, handed over by its address) runs the client
// scenarios and marks the server ones n/a, with why.
func TestVerify_ExternalClientScenarios(t *testing.T) {
	testutil.RequireRedis(t)
	cl, err := cluster.Up(context.Background(), cluster.Config{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Down()
	v, _, err := Verify(context.Background(), VerifyConfig{
		Lock:      harness.Config{Lock: "setnx", Cluster: cluster.Config{Backend: cluster.External, External: cluster.ExternalConfig{Addrs: []string{cl.Nodes[0].Addr}, Password: cl.Password}}},
		Scenarios: []string{"contention", "kill-none"}, OutDir: t.TempDir(), Seed: 1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range v.Rows {
		got[r.Scenario] = string(r.Status)
		if r.Scenario == "kill-none" && !strings.Contains(r.Meaning+r.NA, "external Redis") {
			t.Errorf("kill-none n/a without its reason: %+v", r)
		}
	}
	if got["kill-none"] != "n/a" || got["contention"] != "passed" {
		t.Fatalf("rows %v: want contention passed and kill-none n/a", got)
	}
}
