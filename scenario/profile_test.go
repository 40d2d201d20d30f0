package scenario

import (
	"reflect"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestNeeds_WithWhatTheyDecide: each scenario carries the needs its own
// fields call for (late releases: releasesLate; extends: extendsLeases;
// info_contended: recordsRefusals), so that a lock without what it
// needs finds it n/a with the reason, as before the needs were its own.
func TestNeeds_WithWhatTheyDecide(t *testing.T) {
	carries := func(s Scenario, need Need) bool {
		return slices.ContainsFunc(s.Needs, func(n Need) bool { return reflect.ValueOf(n).Pointer() == reflect.ValueOf(need).Pointer() })
	}
	for _, s := range All() {
		for _, c := range []struct {
			name  string
			calls bool
			need  Need
		}{{"releasesLate", s.Overrun, releasesLate}, {"extendsLeases", s.Extends, extendsLeases},
			{"recordsRefusals", s.Requires[checker.InfoContended] > 0, recordsRefusals}} {
			if c.calls != carries(s, c.need) {
				t.Errorf("%s: carries %s %v, want %v", s.Name, c.name, !c.calls, c.calls)
			}
		}
	}
}

// TestFits_FirstNeedDecides: a scenario's topology decides before its
// needs, and its needs in their order, each with its own reason; a need
// that changes the figures changes them only where the scenario applies.
func TestFits_FirstNeedDecides(t *testing.T) {
	say := func(why string) Need {
		return func(_ Scenario, _ Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
			return why, req
		}
	}
	more := func(_ Scenario, _ Profile, _ string, _ checker.Coverage) (string, checker.Coverage) {
		return "", checker.Coverage{checker.Contended: 9}
	}
	p := ProfileOf(lockimpl.Entry{Name: "one-node", Topology: cluster.Single}, cluster.Config{})
	req := checker.Coverage{checker.Contended: 1}
	for _, c := range []struct {
		name, na string
		s        Scenario
		want     int
	}{
		{"topology first", "only for topology redlock", Scenario{Only: []string{cluster.Redlock}, Needs: []Need{say("a")}, Requires: req}, 1},
		{"in order", "a", Scenario{Needs: []Need{say("a"), say("b")}, Requires: req}, 1},
		{"figures changed", "", Scenario{Needs: []Need{more, say("")}, Requires: req}, 9},
		{"figures kept where n/a", "b", Scenario{Needs: []Need{more, say("b")}, Requires: req}, 1},
	} {
		topo, na, got := c.s.Fits(p)
		if na != c.na || got[checker.Contended] != c.want || topo != cluster.Single {
			t.Errorf("%s: %s, n/a %q, requires %v; want n/a %q, contended %d", c.name, topo, na, got, c.na, c.want)
		}
	}
	if p.Shape != Mutex || !p.Deadline() {
		t.Errorf("profile %+v: want a mutex with deadlines until a run says otherwise", p)
	}
}
