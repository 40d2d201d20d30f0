package scenario

import "github.com/lockcheck/lockcheck/checker"

// waitsUnwatched is what every scenario needs of a blocking lock's run
// (--wait): no client-side extends, whose watchdog wraps Acquire and
// does not see the lease a blocking acquire took from its last try
// (workload.Config refuses the two together), so a scenario whose
// holders keep their leases alive by them (Extends) is n/a unless the
// lock renews them itself.
func waitsUnwatched(s Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Blocking && s.Extends && !p.Renews {
		return "its acquires wait (--wait), and a blocking acquire runs without the client-side extends the scenario keeps leases alive by", req
	}
	return "", req
}
