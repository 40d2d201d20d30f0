package scenario

import (
	"slices"

	"github.com/lockcheck/lockcheck/checker"
)

// leaseScopes is what every scenario needs of a lock whose leases are
// scopes (Profile.Scope), where its figures count only what happens past
// a deadline (deadlineOnly) or its fault stops clients: where its client
// fault stops the lock's own renewals too (a process per client, stopped
// whole), its own figures, or, where those count what happens past a
// deadline, holders stopped past their lease's nominal end while another
// client tried their key (the chance, not the bug); where the fault
// stops only lockcheck's client, or the figures need a deadline the
// fault cannot stand in for, why s is n/a.
func leaseScopes(s Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	const why = "the lock's leases are scopes, with no deadline to pass, and this scenario's figures count what happens past one"
	onClients := s.Nemesis.ActsOnClients()
	switch {
	case p.Deadline() || !(deadlineOnly(s.Requires) || onClients):
		return "", req
	case onClients && !p.PerClient:
		return "the lock's leases are scopes it renews itself, and this scenario's pause stops lockcheck's client, not the library's renewals (run it as a process per client: lockcheck serve)", req
	case !deadlineOnly(s.Requires):
		return "", req
	case len(s.Nemesis.Faults) != 1 || !onClients:
		return why, req
	}
	// The chance the fault gave a scoped lock's bug, not the bug: a
	// holder stopped past its lease's nominal end while another client
	// tried its key (whether that client got it is the finding).
	return "", checker.Coverage{checker.HeldPastTried: 3}
}

// deadlineOnly says whether every figure req counts counts what happens
// after a lease's deadline (checker.DeadlineFigures): a lock whose
// leases are scopes can never give them.
func deadlineOnly(req checker.Coverage) bool {
	for name := range req {
		if !slices.Contains(checker.DeadlineFigures, name) {
			return false
		}
	}
	return len(req) > 0
}
