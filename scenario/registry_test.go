package scenario

import (
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
)

// TestAll_OneNameOneDefinition: every scenario has a name of its own,
// its faults exist, and verify's battery and matrix's columns name only
// scenarios that exist.
func TestAll_OneNameOneDefinition(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if s.Name == "" || s.Description == "" {
			t.Errorf("scenario %q: want a name and a description", s.Name)
		}
		if seen[s.Name] {
			t.Errorf("scenario %q defined twice", s.Name)
		}
		seen[s.Name] = true
		for _, f := range s.Nemesis.Faults {
			if _, err := nemesis.Lookup(f); err != nil {
				t.Errorf("scenario %s: %v", s.Name, err)
			}
		}
	}
	for _, list := range [][]string{battery, MatrixColumns} {
		for _, n := range list {
			if !seen[n] {
				t.Errorf("%q is listed but not registered", n)
			}
		}
	}
	if got := Names(Battery()); !slices.Equal(got, battery) {
		t.Errorf("Battery() = %v, want %v", got, battery)
	}
}

func TestRegister_JoinsBattery(t *testing.T) {
	unregister := Register(Scenario{Name: "throwaway", Description: "a test's"})
	if _, err := Lookup("throwaway"); err != nil {
		t.Fatal(err)
	}
	if b := Battery(); b[len(b)-1].Name != "throwaway" {
		t.Errorf("Battery ends with %q, want the added scenario", b[len(b)-1].Name)
	}
	unregister()
	if _, err := Lookup("throwaway"); err == nil {
		t.Error("Lookup found an unregistered scenario")
	}
}

func TestPick(t *testing.T) {
	got, err := Pick(Battery(), []string{"pause", "contention"})
	if err != nil {
		t.Fatal(err)
	}
	if names := Names(got); !slices.Equal(names, []string{"contention", "pause"}) {
		t.Errorf("Pick = %v, want the battery's order: contention, pause", names)
	}
	if _, err := Pick(Battery(), []string{"no-such"}); err == nil {
		t.Error("Pick of an unknown name: no error")
	}
}

// TestTopologyFor_WaitsNeedsReplicas: a lock that sends WAIT and names no
// topology runs on sentinel wherever a scenario names none (on one node
// its WAIT never succeeds, every acquire ends indeterminate, and no
// scenario is exercised), keeps a scenario's own topology, and a lock
// that sends no WAIT stays on one node.
func TestTopologyFor_WaitsNeedsReplicas(t *testing.T) {
	wait, plain := lockimpl.Entry{Name: "setnx-wait", Waits: true}, lockimpl.Entry{Name: "setnx"}
	for _, tc := range []struct {
		scenario string
		e        lockimpl.Entry
		want     string
	}{{"overrun", wait, cluster.Sentinel}, {"kill-none", wait, cluster.Sentinel}, {"failover", wait, cluster.Sentinel},
		{"overrun", plain, cluster.Single}, {"kill-quorum", wait, cluster.Sentinel}} {
		s, err := Lookup(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		topo, na := s.TopologyFor(ProfileOf(tc.e, cluster.Config{}))
		if topo != tc.want {
			t.Errorf("%s on %s: topology %q (%s), want %s", tc.e.Name, tc.scenario, topo, na, tc.want)
		}
		if tc.scenario == "kill-quorum" && na == "" {
			t.Errorf("%s on kill-quorum: not n/a, want only for redlock", tc.e.Name)
		}
	}
}
