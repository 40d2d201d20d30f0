package checker

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestNotJudged_LeavesTheGuaranteeOut: a release reported ok 400 ms
// after its 100 ms lease expired breaks the lease contract; judged on
// mutual exclusion only (a lock whose leases are scopes), the same
// history is valid, the lease checkers are not run, and the findings
// say which guarantee was left out and why, whole or by key bucket.
func TestNotJudged_LeavesTheGuaranteeOut(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	ops := []history.Op{
		{Index: 0, Process: 1, F: history.Acquire, Type: history.OK, Key: "k", Token: "a", TTLms: 100, Call: 0, Return: ms(1)},
		{Index: 1, Process: 1, F: history.Write, Type: history.OK, Key: "k", Token: "a", Call: ms(2), Return: ms(10)},
		{Index: 2, Process: 1, F: history.Release, Type: history.OK, Key: "k", Token: "a", Call: ms(500), Return: ms(501)},
	}
	if f := CheckWith(context.Background(), All(), ops, Options{}); f.Verdict != Invalid {
		t.Fatalf("judged whole: %s, want invalid (a release ok of an expired lease)", f.Verdict)
	}
	left := Options{NotJudged: map[Guarantee]string{LeaseContract: "a context, not a deadline"}}
	for name, f := range map[string]Findings{
		"whole":     CheckWith(context.Background(), All(), ops, left),
		"partition": partitionCheck(t, ops, 2, left),
	} {
		if f.Verdict != Valid || f.NotJudged[LeaseContract] != "a context, not a deadline" {
			t.Errorf("%s: verdict %s, not judged %v; want valid, the lease contract left out", name, f.Verdict, f.NotJudged)
		}
		for _, n := range Of(LeaseContract) {
			if _, ran := f.Checker(n); ran {
				t.Errorf("%s: %s ran", name, n)
			}
		}
		if m, ok := f.Checker("mutex"); !ok || m.Figures["writes"] != 1 {
			t.Errorf("%s: mutex %+v, want it judged on the one write", name, m)
		}
	}
}

// TestCoverage_ScopedStaleHolder: a holder still in its section when
// another client acquired is a stale holder of a scoped lock (it has no
// deadline to pass), and not of a lease lock while its lease was live.
func TestCoverage_ScopedStaleHolder(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	ops := []history.Op{
		{Index: 0, Process: 1, F: history.Acquire, Type: history.OK, Key: "k", Token: "a", TTLms: 1000, Call: 0, Return: ms(1)},
		{Index: 1, Process: 2, F: history.Acquire, Type: history.OK, Key: "k", Token: "b", TTLms: 1000, Call: ms(200), Return: ms(201)},
		{Index: 2, Process: 1, F: history.Write, Type: history.OK, Key: "k", Token: "a", Call: ms(2), Return: ms(500)},
	}
	lease := CoverageOf(ops, Options{}.Resolved())[StaleHolder]
	scoped := CoverageOf(ops, Options{NotJudged: map[Guarantee]string{LeaseContract: "scope"}}.Resolved())[StaleHolder]
	if lease != 0 || scoped != 1 {
		t.Errorf("stale holders: lease lock %d, scoped %d; want 0 and 1", lease, scoped)
	}
}
