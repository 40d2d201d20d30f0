package checker

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// smallRefusedShape is genRefused's shape cut to what the oracle
// enumerates in a CI run: 2 to 3 leases of 10 ms, 1 to 3 refusals each,
// indeterminate acquires among them (half of them grants), half the ops
// quick and the others reaching up to 20 ms either side, judged at
// tolerance 0 and a 20 ms horizon (at 100 ms, or with a lease more, the
// oracle took a second on some mutations).
var smallRefusedShape = refusedShape{clients: 6, leases: 2, ttl: 10 * time.Millisecond, spread: 20 * time.Millisecond,
	horizon: 20 * time.Millisecond, refused: 2, infos: 2, granted: 2, quick: 2}

// TestLinearizable_AgreesWithOracle_Refused: histories of the issue-66
// shape at the oracle's size (genRefused: few grants, refusals around
// them, indeterminate acquires among them, at tolerance 0 and a horizon
// of two TTLs) are valid by the oracle and the checker in every mode,
// and their mutations (mutate, and in every other one a lease that never
// ends taken in the middle: stuckMid) get the oracle's verdict in every
// mode, both verdicts reached. 100 histories at the default
// -oracle.cases (20 under the race detector), each with its mutation.
func TestLinearizable_AgreesWithOracle_Refused(t *testing.T) {
	n := *oracleCases / 50
	if raceEnabled {
		n /= 5 // the race detector slows the oracle's search tenfold
	}
	verdicts := map[Verdict]int{}
	for seed := range n {
		sh := smallRefusedShape
		sh.leases += seed % 2
		h := oracleHistory{ops: genRefused(uint64(seed), sh), horizon: sh.horizon, label: "refused acquires around few grants"}
		if v := agree(t, h); v != Valid {
			t.Fatalf("seed %d: the oracle finds a correct lock's history %s:\n%s", seed, v, h)
		}
		m := mutate(rand.New(rand.NewPCG(uint64(seed), 67)), h)
		if seed%2 == 1 {
			m = stuckMid(m)
		}
		verdicts[agree(t, m)]++
	}
	t.Logf("%d histories valid, and of as many mutations %d valid, %d invalid", n, verdicts[Valid], verdicts[Invalid])
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("mutations gave %d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
}

// stuckMid adds to h an ok acquire in the middle of its ops, 1 ms wide,
// of a lease of a minute that nothing releases: a lock without a TTL.
func stuckMid(h oracleHistory) oracleHistory {
	h.ops = stuckMidOps(h.ops)
	h.label += ", a lease of a minute taken in the middle"
	return h
}

// stuckMidOps is stuckMid on ops of key k.
func stuckMidOps(ops []history.Op) []history.Op {
	ops = slices.Clone(ops)
	mid := ops[len(ops)/2].Call
	ops = append(ops, history.Op{Process: 100, F: history.Acquire, Type: history.OK, Key: "k", Token: "stuck", TTLms: 60_000,
		Call: mid, Return: mid + int64(time.Millisecond)})
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}
