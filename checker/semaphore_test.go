package checker

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
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

// TestImplicants_CoverTheTable: for every shape and op kind and every
// set of possibly held leases (up to 6), the implicants' ranges, found by
// enumeration or stated by the shape, hold exactly the held sets the
// table admits (a grant's own token's lease gone).
func TestImplicants_CoverTheTable(t *testing.T) {
	defer func(e int) { enumerateUpTo = e }(enumerateUpTo)
	shapes := []shape{semaphore{1}, semaphore{2}, semaphore{3}, readWrite{false}, readWrite{true}}
	r := rand.New(rand.NewPCG(1, 83))
	for trial := 0; trial < 4000; trial++ {
		sh := shapes[r.IntN(len(shapes))]
		m := newPermitModel(sh, 0)
		n := r.IntN(7)
		leases := make([]permitLease, n)
		for j := range leases {
			leases[j] = permitLease{token: string(rune('a' + j)), write: r.IntN(3) == 0}
		}
		op := &permitOp{f: []history.Func{history.Acquire, history.Release, history.Extend}[r.IntN(3)], token: string(rune('a' + r.IntN(8))), write: r.IntN(2) == 0}
		ok, busy := r.IntN(2) == 0, r.IntN(2) == 0
		legal := func(m uint64) bool {
			own := op.f == history.Acquire && ok && m&tokenMask(leases, op.token) != 0
			return !own && sh.legal(heldBy(leases, m), op, ok, busy)
		}
		enumerateUpTo = []int{6, 0}[trial%2]
		cubes := m.implicants(leases, op, ok, busy)
		for mask := uint64(0); mask < 1<<n; mask++ {
			covered := false
			for _, c := range cubes {
				covered = covered || mask&c.care == c.val
			}
			if covered != legal(mask) {
				t.Fatalf("%s (enumerated up to %d), %s ok=%v busy=%v, leases %v: held set %b legal %v, covered %v by %v",
					sh, enumerateUpTo, op, ok, busy, leases, mask, legal(mask), covered, cubes)
			}
		}
	}
}

// TestShapes_ManyHolders: 30 leases held at once, past what enumerating
// held sets allows, are decided by the shapes' own implicants: a writer
// or a 31st permit granted while they hold is invalid, after they are
// released valid; 70, past a cube's bits, are unknown.
func TestShapes_ManyHolders(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tc := range []struct {
		name    string
		sh      shape
		holders int64
		after   bool // the last grant comes after the releases
		want    porcupine.CheckResult
	}{
		{"writer among readers", readWrite{false}, 30, false, porcupine.Illegal},
		{"writer after readers", readWrite{false}, 30, true, porcupine.Ok},
		{"31st of 30 permits", semaphore{30}, 30, false, porcupine.Illegal},
		{"31st after releases", semaphore{30}, 30, true, porcupine.Ok},
		{"70 readers: too many to judge", readWrite{false}, 70, false, porcupine.Unknown},
	} {
		var ops []*permitOp
		for i := range tc.holders {
			tok := "r" + strconv.FormatInt(i, 10)
			ops = append(ops, &permitOp{index: i, process: int(i), f: history.Acquire, typ: history.OK, token: tok, ttl: 1000 * ms, call: i * ms, ret: i*ms + ms/2, orig: i*ms + ms/2})
			ops = append(ops, &permitOp{index: 100 + i, process: int(i), f: history.Release, typ: history.OK, token: tok, call: 200*ms + i*ms, ret: 200*ms + i*ms + ms/2, orig: 200*ms + i*ms + ms/2})
		}
		at := 100 * ms
		if tc.after {
			at = 300 * ms
		}
		ops = append(ops, &permitOp{index: 999, process: 99, f: history.Acquire, typ: history.OK, token: "w", write: true, ttl: 10 * ms, call: at, ret: at + ms, orig: at + ms})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got := checkPermits(ctx, newPermitModel(tc.sh, 0), ops)
		cancel()
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
