package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/internal/ext"
)

var added ext.Added[Scenario]

// Register adds a scenario from here on (to All, and at the end of
// Battery), until the func it returns unregisters it.
func Register(s Scenario) (unregister func()) { return added.Add(s) }

// builtin is every scenario of this package. To add one: a file with its
// Scenario, and a line here (and in Battery or MatrixColumns to run it).
func builtin() []Scenario {
	return []Scenario{none, contention, overrun, overrunFree, extend, pause, crash, cutOff, clientClock, pauseRedis, lostReply, cancelOps, starve, pool, dropUnlock, stallQuiet,
		killNone, killEverysec, killAlways, killDelayed, killExtend, failover, partition, partitionDetect, clockJump, clockQuorum, killQuorum}
}

// All returns every scenario, those Register added included, in the
// order of builtin.
func All() []Scenario { return added.With(builtin()) }

// battery is verify's battery, client-side scenarios first: each a
// workload and a fault chosen so that one classic failure gets its
// chance, and the coverage that shows it did.
var battery = []string{"contention", "overrun", "overrun-free", "extend", "pause", "crash", "cut-off", "client-clock", "pause-redis", "lost-reply", "cancel", "starve", "pool", "drop-unlock", "stall-quiet",
	"kill-none", "kill-everysec", "kill-always", "kill-delayed", "kill-extend", "failover", "partition", "partition-detect", "clock-jump", "clock-quorum", "kill-quorum"}

// MatrixColumns are lockcheck matrix's default columns: the faults that
// separate the locks of a deployment table.
var MatrixColumns = []string{"none", "pause", "kill-none", "kill-delayed", "kill-always", "clock-jump", "clock-quorum", "failover"}

// Battery returns verify's battery: its scenarios in order, then those
// Register added.
func Battery() []Scenario {
	var out []Scenario
	for _, n := range battery {
		s, _ := Lookup(n)
		out = append(out, s)
	}
	return added.With(out)
}

// Lookup returns the named scenario.
func Lookup(name string) (Scenario, error) {
	all := All()
	if i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == name }); i >= 0 {
		return all[i], nil
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s; see lockcheck list)", name, strings.Join(Names(all), ", "))
}

// Pick returns the named scenarios of from, in from's order (all of them
// if names is empty).
func Pick(from []Scenario, names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return from, nil
	}
	for _, n := range names {
		if !slices.ContainsFunc(from, func(s Scenario) bool { return s.Name == n }) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(Names(from), ", "))
		}
	}
	var out []Scenario
	for _, s := range from {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Names returns the names of ss.
func Names(ss []Scenario) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.Name)
	}
	return names
}
