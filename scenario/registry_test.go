package scenario

import (
	"slices"
	"testing"

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
