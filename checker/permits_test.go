package checker

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// shapeCases is how many seeds each shape's oracle test runs (each seed a
// simulated correct history and a mutation of it): LOCKCHECK_SHAPE_CASES,
// else 5000 (10,000 histories), 500 under -short or the race detector
// (the search is one goroutine's, and the detector slows it tenfold:
// make test runs these tests again without it, at 5000).
func shapeCases(t *testing.T) int {
	if s := os.Getenv("LOCKCHECK_SHAPE_CASES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("LOCKCHECK_SHAPE_CASES=%q: %v", s, err)
		}
		return n
	}
	if testing.Short() || raceEnabled {
		return 500
	}
	return 5000
}

func (h shapeHistory) shape() shape {
	if h.k > 0 {
		return semaphore{h.k}
	}
	return readWrite{h.writerPref}
}

func (h shapeHistory) permitOps() []*permitOp {
	var ptrs []*history.Op
	for i := range h.ops {
		if h.ops[i].F != history.Write {
			ptrs = append(ptrs, &h.ops[i])
		}
	}
	return toPermitOps(ptrs, int64(h.horizon), h.writerPref)
}

// shapeModes are the ways a shape's model decides a key, each of which
// must agree with the oracle: cut (permitCuts) and carried piece to piece
// (frontierCheck); the same with porcupine from the first piece wider
// than two sets of linearized ops; porcupine alone on the whole key.
var shapeModes = []string{"cuts and frontier", "cuts, frontier, porcupine", "porcupine alone"}

// modelSays decides h with the shape's model in the named mode.
func (h shapeHistory) modelSays(t testing.TB, mode string) Verdict {
	m := newPermitModel(h.shape(), int64(h.eps))
	ops := h.permitOps()
	var r porcupine.CheckResult
	switch mode {
	case "porcupine alone":
		r = porcupine.CheckOperationsTimeout(m.porcupine(), toPorcupinePermits(ops), time.Minute)
	default:
		if mode == "cuts, frontier, porcupine" {
			defer func(n, e int) { frontierConfigs, enumerateUpTo = n, e }(frontierConfigs, enumerateUpTo)
			frontierConfigs, enumerateUpTo = 2, 0
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r = checkPermits(ctx, m, ops)
	}
	switch r {
	case porcupine.Ok:
		return Valid
	case porcupine.Illegal:
		return Invalid
	}
	t.Fatalf("the model ran out of time on:\n%s", h)
	return Unknown
}

// agreeShape checks h with the model, cut and whole, against the oracle,
// and returns the oracle's verdict.
func agreeShape(t testing.TB, seed int, h shapeHistory) Verdict {
	want := oracleShapeSays(h)
	for _, mode := range shapeModes {
		if got := h.modelSays(t, mode); got != want {
			t.Fatalf("seed %d: model (%s) says %s, oracle says %s:\n%s", seed, mode, got, want, h)
		}
	}
	return want
}

// testShapeAgainstOracle runs the oracle test of one shape: every
// simulated correct history valid, the mutations both ways, the model
// with and without cuts agreeing with the oracle on each.
func testShapeAgainstOracle(t *testing.T, stream uint64, gen func(r *rand.Rand) shapeHistory) {
	n := shapeCases(t)
	verdicts := map[Verdict]int{}
	split, carried, hulled, grouped := 0, 0, 0, 0
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), stream))
		h := gen(r)
		if v := agreeShape(t, seed, h); v != Valid {
			t.Fatalf("seed %d: the simulated correct lock is %s by the oracle:\n%s", seed, v, h)
		}
		verdicts[Valid]++
		m := mutateShape(r, h)
		before, groupsBefore := hullsMade.Load(), groupHullsMade.Load()
		verdicts[agreeShape(t, seed, m)]++
		if hullsMade.Load() > before {
			hulled++
		}
		if groupHullsMade.Load() > groupsBefore {
			grouped++
		}
		if len(permitCuts(m.permitOps(), int64(m.eps))) > 1 {
			split++
		}
		if carriesInfo(m.permitOps()) {
			carried++
		}
	}
	t.Logf("%d histories (%d simulated, %d mutations): %d valid, %d invalid, 0 disagreements; of the mutations, %d split by cuts, %d with info ops carried from piece to piece, %d with states merged into their hull, %d with a group of three or more merged",
		2*n, n, n, verdicts[Valid], verdicts[Invalid], split, carried, hulled, grouped)
	if verdicts[Valid]-n < n/10 || verdicts[Invalid] < n/10 || split < n/40 || carried < n/40 || hulled < n/40 || grouped < n/40 {
		t.Errorf("mutations gave %d valid and %d invalid of %d, %d split, %d carried, %d hulled, %d grouped: too one-sided to prove anything", verdicts[Valid]-n, verdicts[Invalid], n, split, carried, hulled, grouped)
	}
}

// TestSemaphore_AgreesWithOracle: semaphores of 1 to 3 permits.
func TestSemaphore_AgreesWithOracle(t *testing.T) {
	testShapeAgainstOracle(t, 71, func(r *rand.Rand) shapeHistory {
		return simShape(r, 4+r.IntN(5), 1+r.IntN(3), false)
	})
}

// TestReadWrite_AgreesWithOracle: read-write locks, writers preferred or
// not.
func TestReadWrite_AgreesWithOracle(t *testing.T) {
	testShapeAgainstOracle(t, 73, func(r *rand.Rand) shapeHistory {
		return simShape(r, 4+r.IntN(5), 0, r.IntN(2) == 0)
	})
}

// carriesInfo reports whether a piece of ops ends with an info op in
// flight, which frontierCheck carries on.
func carriesInfo(ops []*permitOp) bool {
	pieces, ends := infoPieces(ops)
	for i := range pieces[:len(pieces)-1] {
		for _, o := range ops {
			if o.call < ends[i] && o.ret >= ends[i] {
				return true
			}
		}
	}
	return false
}
