package testutil

import "github.com/lockcheck/lockcheck/checker"

// Hit says whether a run whose coverage is cov gave its faults their
// chance: each began at least once while a lease was surely live, and
// every figure of needs was reached. A fault test counts only such runs.
func Hit(cov checker.Coverage, faults []string, needs checker.Coverage) bool {
	for _, f := range faults {
		if cov[checker.Hit(f)] == 0 {
			return false
		}
	}
	for name, n := range needs {
		if cov.Count(name) < n {
			return false
		}
	}
	return true
}
