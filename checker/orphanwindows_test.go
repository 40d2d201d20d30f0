package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestLinearizable_AgreesWithOracle_NarrowedOrphans: a simulated correct
// lock with orphans of other clients laid over its leases (info acquires
// whose token nothing names, that took effect or not: the history stays
// valid only if the oracle finds a timeline) and refusals scattered where
// they may or may not have a holder (a node that lost a lease, then
// granted it to an unacknowledged acquire, as setnx-wait-all's kill
// scenarios record) gets the oracle's verdict in every mode, narrowOrphans
// on and off, and every other one mutated as the other oracle tests
// mutate. The shapes must make narrowOrphans narrow, gap and drop
// orphans often, with both verdicts among them, or the agreement would not
// test it.
func TestLinearizable_AgreesWithOracle_NarrowedOrphans(t *testing.T) {
	n := *oracleCases / 5
	verdicts := map[Verdict]int{}
	var narrowed, gapped, dropped, decidedBy int
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 53))
		h := withOrphans(r, simKey(r, 2+r.IntN(5)))
		if seed%2 == 1 {
			h = mutate(r, h)
		}
		v := agreeIn(t, h, stallModes)
		verdicts[v]++
		lops := h.lockOps()
		m := leaseModel{eps: int64(h.eps)}
		_, before := orphansOf(lops)
		after := narrowOrphans(m, lops)
		_, left := orphansOf(after)
		changed := false
		for _, o := range left {
			if len(o.gaps) > 0 {
				gapped++
				changed = true
			}
			if !slices.Contains(before, o) {
				changed = true
			}
		}
		if len(left) < len(before) {
			dropped++
			changed = true
		}
		if changed {
			narrowed++
		}
		// Where the interval reasoning refutes only once narrowed.
		if v == Invalid && uncoveredFail(m, lops) == nil && uncoveredFail(m, after) != nil {
			decidedBy++
		}
	}
	t.Logf("%d histories: %d valid, %d invalid; narrowOrphans changed %d (%d with gaps, %d dropping orphans); uncoveredFail refuted %d only once narrowed",
		n, verdicts[Valid], verdicts[Invalid], narrowed, gapped, dropped, decidedBy)
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("%d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
	if narrowed < n/5 || gapped < n/50 || dropped < n/50 || decidedBy < n/100 {
		t.Errorf("narrowOrphans changed %d of %d (gaps %d, drops %d, refutations it made %d): too few to test it", narrowed, n, gapped, dropped, decidedBy)
	}
}

// withOrphans adds to h 1 to 3 orphan info acquires and 1 to 3 refusals,
// each at a random interval over h's span, with TTLs like h's.
func withOrphans(r *rand.Rand, h oracleHistory) oracleHistory {
	const ms = int64(time.Millisecond)
	end := int64(0)
	for _, op := range h.ops {
		end = max(end, op.Return/ms)
	}
	h.ops = slices.Clone(h.ops)
	add := func(typ history.Type, token string) {
		call := r.Int64N(end + 10)
		h.ops = append(h.ops, history.Op{Process: 10 + len(h.ops), Key: "k", F: history.Acquire, Type: typ, Token: token,
			TTLms: 5 + r.Int64N(25), Call: call * ms, Return: (call + r.Int64N(6)) * ms})
	}
	for k := 0; k < 1+r.IntN(3); k++ {
		add(history.Info, fmt.Sprintf("orphan%d", k))
	}
	for k := 0; k < 1+r.IntN(3); k++ {
		add(history.Fail, fmt.Sprintf("refused%d", k))
	}
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	h.label += ", with orphans and refusals laid over it"
	return h
}

// TestLinearizable_WaitAllKillNone: setnx-wait-all's key from a
// kill-none run (checker/testdata/wait-all-kill-none.jsonl): the master
// restarted empty under a lease held until at least 5.356 s, and the key
// was then taken by an acquire whose grant no replica acknowledged (an
// orphan), refusals went on until 5.97 s, and another client acquired at
// 6.044 s. No orphan can hold the key through those refusals: the held
// lease closes the instants before 5.356 s to them, the grant at 6.044 s
// those after 5.095 s. Before narrowOrphans, porcupine searched 35
// orphans' orders and the key was unknown at a 2-minute timeout; the
// lease model finds it invalid (the restart lost a held lease), and the
// interval reasoning now says so without a search.
func TestLinearizable_WaitAllKillNone(t *testing.T) {
	ops, err := history.ReadFile("testdata/wait-all-kill-none.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := Linearizable(context.Background(), ops, Options{ClockTolerance: Exactly(50 * time.Millisecond), Timeout: 2 * time.Minute}.Resolved())
	if r.Verdict != Invalid || len(r.Violations) != 1 {
		t.Fatalf("verdict %s, violations %+v, undecided %+v: want invalid (a refusal no lease could cover)", r.Verdict, r.Violations, r.Undecided)
	}
	if v := r.Violations[0]; !strings.Contains(v.Message, "no lease could hold the key") {
		t.Errorf("violation %q: want the uncovered refusal", v.Message)
	}
}

// TestLinearizable_WaitAllKillNoneChain: another setnx-wait-all key from
// kill-none (checker/testdata/wait-all-kill-none-chain.jsonl): the master
// restarted empty under a lease held until at least 4.92 s; refusals went
// on from 5.46 s to 6.79 s, and another client acquired at 6.81 s. Only
// orphans can hold the key for those refusals, and their leases (1 s)
// exclude one another: one set after 4.92 s cannot reach 6.79 s unless
// set after 5.74 s, and two cannot both fit before the grant (the second
// would start after 5.87 s and block it). orphanShortfall counts the
// leases that fit one after another; before it, the key was out of memory
// after 48 s in a verify run.
func TestLinearizable_WaitAllKillNoneChain(t *testing.T) {
	ops, err := history.ReadFile("testdata/wait-all-kill-none-chain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := Linearizable(context.Background(), ops, Options{ClockTolerance: Exactly(50 * time.Millisecond), InfoHorizon: Exactly(4 * time.Second), Timeout: 2 * time.Minute}.Resolved())
	if r.Verdict != Invalid || len(r.Violations) != 1 {
		t.Fatalf("verdict %s, violations %+v, undecided %+v: want invalid (more orphan leases needed than fit)", r.Verdict, r.Violations, r.Undecided)
	}
	if v := r.Violations[0]; !strings.Contains(v.Message, "one after another") {
		t.Errorf("violation %q: want the orphan shortfall", v.Message)
	}
}
