package checker

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestSemaphore_OnePermitIsTheMutex: the semaphore's model with k = 1
// gives the mutex checker's verdict (Linearizable, every reduction on) on
// the mutex's random histories (simKey and mutations of it: additive and
// replacing extends, answered and unanswered info ops), and the shapes'
// oracle with k = 1 gives the mutex oracle's.
func TestSemaphore_OnePermitIsTheMutex(t *testing.T) {
	n := shapeCases(t)
	verdicts := map[Verdict]int{}
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 79))
		base := simKey(r, 2+r.IntN(7))
		for _, h := range []oracleHistory{base, mutate(r, base)} {
			sh := shapeHistory{oracleHistory: h, k: 1}
			want := Linearizable(context.Background(), h.ops, Options{ClockTolerance: Exactly(h.eps), InfoHorizon: Exactly(h.horizon),
				Timeout: time.Minute}.Resolved()).Verdict
			for _, mode := range shapeModes {
				if got := sh.modelSays(t, mode); got != want {
					t.Fatalf("seed %d: semaphore of 1 permit (%s) says %s, the mutex checker %s:\n%s", seed, mode, got, want, sh)
				}
			}
			if seed%5 == 0 && h.horizon <= 12*time.Millisecond {
				if got, mutex := oracleShapeSays(sh), h.oracleSays(); got != mutex {
					t.Fatalf("seed %d: the shapes' oracle with k = 1 says %s, the mutex oracle %s:\n%s", seed, got, mutex, sh)
				}
			}
			verdicts[want]++
		}
	}
	t.Logf("%d mutex histories: %d valid, %d invalid, the semaphore of 1 permit agreeing on each", 2*n, verdicts[Valid], verdicts[Invalid])
	if verdicts[Invalid] < n/10 {
		t.Errorf("%d invalid of %d: too one-sided", verdicts[Invalid], 2*n)
	}
}

// TestPrimeImplicants_CoverTheTable: for every shape and op kind and every
// set of possibly held leases (up to 5), the implicants' ranges hold
// exactly the held sets the table admits.
func TestPrimeImplicants_CoverTheTable(t *testing.T) {
	shapes := []shape{semaphore{1}, semaphore{2}, semaphore{3}, readWrite{false}, readWrite{true}}
	r := rand.New(rand.NewPCG(1, 83))
	for trial := 0; trial < 2000; trial++ {
		sh := shapes[r.IntN(len(shapes))]
		n := r.IntN(6)
		leases := make([]permitLease, n)
		for j := range leases {
			leases[j] = permitLease{token: string(rune('a' + j)), write: r.IntN(3) == 0}
		}
		op := &permitOp{f: []history.Func{history.Acquire, history.Release, history.Extend}[r.IntN(3)], token: string(rune('a' + r.IntN(7))), write: r.IntN(2) == 0}
		ok, busy := r.IntN(2) == 0, r.IntN(2) == 0
		legal := func(m uint64) bool { return sh.legal(heldBy(leases, m), op, ok, busy) }
		cubes := primeImplicants(n, legal)
		for m := uint64(0); m < 1<<n; m++ {
			covered := false
			for _, c := range cubes {
				covered = covered || m&c.care == c.val
			}
			if covered != legal(m) {
				t.Fatalf("%s, %s ok=%v busy=%v, leases %v: held set %b legal %v, covered %v by %v", sh, op, ok, busy, leases, m, legal(m), covered, cubes)
			}
		}
	}
}
