package checker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestMinimal_AgreesWithOracle: the fewest ops minimal finds for an
// invalid key are, by the brute-force oracle, a contradiction on their
// own (invalid with every other op relaxed) and 1-minimal (each one
// relaxed too leaves a valid history), and few: at most four ops for
// every invalid history of the corpus, every invalid mutation of a
// simulated correct lock (plain and slow ops) and every invalid key
// behind repeated stalls of up to four orphans (simStalls).
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
	// Keys behind a stalled Redis: orphans, and refusals that outnumber
	// what their leases can cover.
	for seed := 0; seed < 120; seed++ {
		if h := simStalls(rand.New(rand.NewPCG(uint64(seed), 61))); countOrphans(h) <= 4 {
			hs = append(hs, h) // the oracle's reach, where each set is tried without each op
		}
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
			t.Fatalf("%s: the fewest ops %v are valid by the oracle with the rest relaxed\n%s", h.label, kept, h)
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
// finds each set invalid with every other op of the whole key relaxed.
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

// TestRelaxed_LosesNoTimeline: relaxing ops (an ok one made
// indeterminate, a failed one left out) only adds timelines, so a key the
// brute-force oracle finds valid stays valid however many of its ops are
// relaxed, and a set of ops found invalid relaxed is a contradiction in
// the key. Keys of a simulated correct lock (plain, slow ops, stalled
// Redis) and their mutations, valid and invalid; for each valid one,
// random sets of ops kept as recorded. A relaxation that leaves out an
// ok acquire, an ok release or an orphan fails it (each tried).
func TestRelaxed_LosesNoTimeline(t *testing.T) {
	checked, withFail := 0, 0
	for seed := 0; seed < 600; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 67))
		var h oracleHistory
		switch seed % 3 {
		case 0:
			h = simKey(r, 2+r.IntN(7))
		case 1:
			h = widen(r, simKey(r, 2+r.IntN(7)))
		default:
			h = simStall(r)
		}
		if seed%2 == 1 {
			h = mutate(r, h)
		}
		if h.oracleSays() != Valid {
			continue
		}
		lops := h.lockOps()
		if len(lops) > 12 {
			continue // the oracle's reach
		}
		for try := 0; try < 4; try++ {
			var kept []int
			for i := range lops {
				if r.IntN(2) == 0 {
					kept = append(kept, i)
				}
			}
			rel := relaxed(lops, kept)
			checked++
			if len(rel) < len(lops) {
				withFail++
			}
			if !oracle(rel, int64(h.eps)) {
				t.Fatalf("%s: valid, but invalid by the oracle with only %v kept as recorded\n%s", h.label, kept, h)
			}
		}
	}
	t.Logf("%d relaxed valid keys, %d with failed ops left out", checked, withFail)
	if checked < 400 || withFail < checked/4 {
		t.Errorf("%d relaxed keys, %d leaving failed ops out: too few to test relaxed", checked, withFail)
	}
}

// TestMinimal_StuckKey: a key stuck after its holder stopped (no TTL on
// the key, or a client that set one and kept it alive) is refused to
// every client for a second; an orphan from a stall may have set the key
// in between. The fewest ops are the refusal that no lease could cover,
// with at most the lease before it: a refused op outside the set is left
// out, not made indeterminate (which made each of the hundred refusals
// near it a possible holder to rule out, and sets of 14 to 156 ops in
// the battery's stuck keys).
func TestMinimal_StuckKey(t *testing.T) {
	const ms = int64(time.Millisecond)
	var ops []history.Op
	add := func(p int, f history.Func, typ history.Type, tok string, call, ret int64) {
		op := history.Op{Index: int64(len(ops)), Process: p, Key: "k", F: f, Type: typ, Token: tok, Call: call * ms, Return: ret * ms}
		if f != history.Release {
			op.TTLms = 100
		}
		ops = append(ops, op)
	}
	for i := range 10 { // leases handed on, then one kept
		tok := fmt.Sprintf("t%d", i)
		add(i%4, history.Acquire, history.OK, tok, int64(50*i), int64(50*i)+1)
		if i < 9 {
			add(i%4, history.Release, history.OK, tok, int64(50*i)+30, int64(50*i)+31)
		}
	}
	add(5, history.Acquire, history.Info, "orphan", 700, 710)
	for c := range 100 {
		call := int64(460 + 10*c)
		add(10+c%20, history.Acquire, history.Fail, "", call, call+2)
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Return, b.Return) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	res := Linearizable(context.Background(), ops, Options{ClockTolerance: Exactly(5 * time.Millisecond), InfoHorizon: Exactly(50 * time.Millisecond)}.Resolved())
	if res.Verdict != Invalid || len(res.Violations) == 0 {
		t.Fatalf("a stuck key: %s, want invalid", res.Verdict)
	}
	v := res.Violations[0]
	if len(v.Minimal) == 0 || len(v.Minimal) > 2 {
		t.Fatalf("a stuck key's fewest ops are %v, want the refusal no lease covers, with at most its lease:\n%s", v.Minimal, strings.Join(v.Explanation, "\n"))
	}
	for _, i := range v.Minimal {
		if op := ops[i]; op.Type == history.Fail && op.Call < 550*ms {
			t.Errorf("the fewest ops %v keep refusal #%d at %v, which the last lease (set by 451 ms, 100 ms TTL) or the orphan may cover", v.Minimal, i, time.Duration(op.Call))
		}
	}
}
