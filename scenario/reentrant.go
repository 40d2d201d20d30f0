package scenario

import "github.com/lockcheck/lockcheck/checker"

// reentersUnwatched is what every scenario needs of a reentrant lock's
// run (--reenter): no client-side extends, whose watchdog wraps Acquire
// and does not see re-entries (workload.Config refuses the two
// together), so a scenario whose holders keep their leases alive by
// them (Extends) is n/a unless the lock renews them itself.
func reentersUnwatched(s Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Shape == Reentrant && s.Extends && !p.Renews {
		return "its holders re-enter (--reenter), and re-entries run without the client-side extends the scenario keeps leases alive by", req
	}
	return "", req
}
