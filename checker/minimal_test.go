package checker

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// TestMinimal_AgreesWithOracle: the fewest ops minimal finds for an
// invalid key are, by the brute-force oracle, a contradiction on their
// own (invalid with every other op indeterminate) and 1-minimal (each one
// made indeterminate too leaves a valid history), and few: at most four
// ops for every invalid history of the corpus and every invalid mutation
// of a simulated correct lock (plain and slow ops).
func TestMinimal_AgreesWithOracle(t *testing.T) {
	var hs []oracleHistory
	names, _ := filepath.Glob("testdata/histories/*.jsonl")
	for _, name := range names {
		ops, err := history.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var lock []history.Op
		for _, op := range ops {
			if op.F == history.Acquire || op.F == history.Release || op.F == history.Extend {
				lock = append(lock, op)
			}
		}
		if len(lock) > 12 || len(lock) == 0 || len(keysOf(lock)) > 1 {
			continue // the oracle's reach; one key
		}
		hs = append(hs, oracleHistory{ops: lock, eps: corpusOpts.ClockTolerance, horizon: corpusOpts.InfoHorizon, label: filepath.Base(name)})
	}
	for seed := 0; seed < 400; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 59))
		h := simKey(r, 2+r.IntN(7))
		if seed%2 == 1 {
			h = widen(r, h)
		}
		hs = append(hs, mutate(r, h))
	}
	sizes := map[int]int{}
	for _, h := range hs {
		if h.oracleSays() != Invalid {
			continue
		}
		lops := h.lockOps()
		m := leaseModel{eps: int64(h.eps)}
		c := keyCheck{ctx: context.Background(), m: m, pm: m.porcupine()}
		set := c.minimal(lops, whole)
		if len(set) == 0 {
			t.Fatalf("%s: no fewest ops found for an invalid key\n%s", h.label, h)
		}
		kept := indexesIn(lops, set)
		if oracle(relaxed(lops, kept), int64(h.eps)) {
			t.Fatalf("%s: the fewest ops %v are valid by the oracle with the rest indeterminate\n%s", h.label, kept, h)
		}
		for k := range kept {
			fewer := append(append([]int{}, kept[:k]...), kept[k+1:]...)
			if !oracle(relaxed(lops, fewer), int64(h.eps)) {
				t.Fatalf("%s: the fewest ops %v are not 1-minimal: without #%d still invalid by the oracle\n%s", h.label, kept, lops[kept[k]].index, h)
			}
		}
		if len(set) > 4 {
			t.Errorf("%s: %d fewest ops, want at most 4\n%s", h.label, len(set), h)
		}
		sizes[len(set)]++
	}
	t.Logf("fewest ops per invalid history (size: count): %v", sizes)
	if sizes[1]+sizes[2]+sizes[3]+sizes[4] < 50 {
		t.Errorf("only %v invalid histories: too few to test minimal", sizes)
	}
}

func keysOf(ops []history.Op) map[string]bool {
	ks := map[string]bool{}
	for _, op := range ops {
		ks[op.Key] = true
	}
	return ks
}

func indexesIn(lops, set []*lockOp) []int {
	var out []int
	for i, lo := range lops {
		for _, s := range set {
			if s == lo {
				out = append(out, i)
			}
		}
	}
	return out
}

// TestMinimal_NearOps_AgreesWithOracle: a key too long to shrink whole is
// shrunk among the ops near its violation (nearOps), and what that finds
// must still be a contradiction in the whole key: every key of the
// oracle test is sent that way (wholeOps 0), and the brute-force oracle
// finds each set invalid with every other op of the whole key
// indeterminate.
func TestMinimal_NearOps_AgreesWithOracle(t *testing.T) {
	defer func(w int) { wholeOps = w }(wholeOps)
	wholeOps = 0
	found, invalid := 0, 0
	for seed := 0; seed < 2000; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 61))
		h := simKey(r, 2+r.IntN(7))
		if seed%2 == 1 {
			h = widen(r, h)
		}
		h = mutate(r, h)
		if h.oracleSays() != Invalid {
			continue
		}
		invalid++
		lops := h.lockOps()
		res := Linearizable(context.Background(), h.ops, Options{ClockTolerance: Exactly(h.eps), InfoHorizon: Exactly(h.horizon)}.Resolved())
		if res.Verdict != Invalid || len(res.Violations) != 1 {
			t.Fatalf("%s: the checker says %s where the oracle says invalid\n%s", h.label, res.Verdict, h)
		}
		viol := res.Violations[0]
		if len(viol.Minimal) == 0 {
			continue
		}
		found++
		var kept []int
		for i, lo := range lops {
			if slices.Contains(viol.Minimal, lo.index) {
				kept = append(kept, i)
			}
		}
		if oracle(relaxed(lops, kept), int64(h.eps)) {
			t.Fatalf("%s: the fewest ops %v found near the violation are valid by the oracle in the whole key\n%s", h.label, viol.Minimal, h)
		}
	}
	t.Logf("%d invalid histories, %d shrunk near their violation", invalid, found)
	if invalid < 50 || found < invalid/2 {
		t.Errorf("%d invalid histories, %d shrunk: too few to test nearOps", invalid, found)
	}
}
