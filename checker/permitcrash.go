package checker

import "github.com/lockcheck/lockcheck/history"

// crashedFull counts a semaphore's (k permits) abandoned leases (acquired,
// never released: their holder crashed) whose holder was last seen alive
// (the return of its process's last op: a crashed client's successor
// runs under another id) while all k permits of the key were surely
// held, its own among them, and whose key another client then tried
// after the lease had surely expired. Its holder's release, if it
// called one (the crash cut it off: it never surely happened), is not
// a sign of life: its last op called before it is. That is the chance a permit the
// crash leaks needs to show: the try finds fewer than k held where a
// lock that never gives the permit back refuses it.
func crashedFull(ops []history.Op, acquires map[string][]*history.Op, keys map[string]*keyLeases, k int, o Options) int {
	byProcess := map[int][]*history.Op{}
	for i := range ops {
		if op := &ops[i]; op.F != history.Nemesis {
			byProcess[op.Process] = append(byProcess[op.Process], op)
		}
	}
	n := 0
	for key, kl := range keys {
		for _, l := range kl.leases {
			if len(l.steps) == 0 || l.released {
				continue
			}
			t := lastSeen(byProcess[l.steps[0].Process], l.releaseCall)
			if !l.liveAt(t, o) || !triedAfter(acquires[key], l.steps[0].Token, l.upper(never, o)) {
				continue
			}
			live := 0
			kl.near(t, func(m *leaseSpan) bool {
				if m.liveAt(t, o) {
					live++
				}
				return live < k
			})
			if live >= k {
				n++
			}
		}
	}
	return n
}

// lastSeen is the latest return of ops called before the release call
// rc: when their process was last seen alive, holding its lease.
func lastSeen(ops []*history.Op, rc int64) int64 {
	var t int64
	for _, op := range ops {
		if op.Call < rc {
			t = max(t, op.Return)
		}
	}
	return t
}
