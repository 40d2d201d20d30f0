package checker

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// faultyHistory is genHistory broken in every way the per-key checkers
// look for, with faults over it: stolen leases, overlapping and
// backwards-fenced writes, indeterminate releases, forgotten releases
// (abandoned leases, stuck keys), extends.
func faultyHistory(seed uint64) []history.Op {
	const ms = int64(time.Millisecond)
	r := rand.New(rand.NewPCG(seed, 7))
	base := genHistory(seed, 40, 4, 200, 100*time.Millisecond)
	var ops []history.Op
	fence := map[string]int64{}
	var end int64
	for _, op := range base {
		end = max(end, op.Return)
		switch {
		case op.F == history.Acquire && op.Type == history.Fail && r.IntN(40) == 0:
			op.Type, op.Token = history.OK, "thief-"+strconv.Itoa(r.IntN(1e6))
		case op.F == history.Release && op.Type == history.OK && r.IntN(30) == 0:
			op.Type = history.Info
		case op.F == history.Release && r.IntN(50) == 0:
			continue // forgotten
		}
		ops = append(ops, op)
		if op.F == history.Acquire && op.Type == history.OK {
			fence[op.Key]++
			f := fence[op.Key]
			if r.IntN(25) == 0 {
				f -= 2
			}
			w := history.Op{Process: op.Process, F: history.Write, Type: history.OK, Key: op.Key, Token: op.Token, Fence: max(f, 1),
				Call: op.Return + 10_000, Return: op.Return + 10_000 + r.Int64N(3*ms), CutShort: r.IntN(9) == 0, Late: r.IntN(11) == 0}
			ops = append(ops, w)
			if r.IntN(6) == 0 {
				ops = append(ops, history.Op{Process: op.Process, F: history.Extend, Type: history.OK, Key: op.Key, Token: op.Token,
					TTLms: 100, Mode: []string{"", history.ExtendAdd}[r.IntN(2)], Call: w.Return, Return: w.Return + 200_000})
			}
		}
	}
	for t := int64(50 * ms); t < end; t += 150 * ms {
		fault := []string{"pause-redis", "kill-redis"}[r.IntN(2)]
		ops = append(ops,
			history.Op{Process: history.NemesisProcess, F: history.Nemesis, Type: history.Info, Call: t, Return: t + ms,
				Value: &history.NemesisValue{Fault: fault, Phase: "start", Targets: []string{"n1"}}},
			history.Op{Process: history.NemesisProcess, F: history.Nemesis, Type: history.Info, Call: t + 40*ms, Return: t + 41*ms,
				Value: &history.NemesisValue{Fault: fault, Phase: "stop", Targets: []string{"n1"},
					Events: map[string]int64{history.GrantedByDeposed: int64(r.IntN(3))}}})
		if fault == "kill-redis" {
			// Grants of lost leases' keys, some judged overlapping by
			// the part of the history that holds their key.
			stop := ops[len(ops)-1].Value
			for len(stop.Retaken) < 6 {
				a := base[r.IntN(len(base))]
				if a.F == history.Acquire && a.Token != "" {
					stop.Retaken = append(stop.Retaken, history.Retake{Key: a.Key, Token: a.Token, At: a.Return + r.Int64N(100*ms)})
				}
			}
			stop.Events[history.LostRetaken] = int64(len(stop.Retaken))
		}
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

func partitionCheck(t *testing.T, ops []history.Op, buckets int, opt Options) Findings {
	t.Helper()
	p, err := NewPartition(t.TempDir(), buckets)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for lo := 0; lo < len(ops); lo += 1000 {
		if err := p.Add(ops[lo:min(lo+1000, len(ops))]); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := p.Check(context.Background(), opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// noElapsed is f without the checkers' timings, which differ run to run.
//
// It also leaves out the fewest ops found for a violation (Minimal, and
// the lines that list them): which keys get them depends on which keys a
// part holds (the first minimalKeys invalid keys of each check), and the
// search for them is bounded in time (TestMinimal_AgreesWithOracle tests
// them).
func noElapsed(f Findings) Findings {
	f.Checkers = slices.Clone(f.Checkers)
	for i := range f.Checkers {
		f.Checkers[i].Elapsed = ""
		vs := slices.Clone(f.Checkers[i].Violations)
		for j := range vs {
			vs[j].Minimal = nil
			if k := slices.Index(vs[j].Explanation, aroundLine); k >= 0 {
				vs[j].Explanation = vs[j].Explanation[k+1:]
			} else if len(vs[j].Explanation) > 0 && vs[j].Explanation[0] == fewestLine {
				vs[j].Explanation = nil
			}
		}
		f.Checkers[i].Violations = vs
	}
	f.hits = nil
	return f
}

// TestPartition_SameAsWhole: a history checked bucket by bucket, in
// bounded memory, gets exactly the findings of the history checked whole:
// every checker's verdict, figures and violations (the first
// MaxViolations, in the same order), and the coverage, hits included.
func TestPartition_SameAsWhole(t *testing.T) {
	// Every registered checker runs split, a throwaway one among them
	// whose figures merge each way.
	defer Register(opsPerKey)()
	// The fewest ops of each violation are left out of the comparison
	// (noElapsed), so none are sought.
	spent := new(atomic.Int64)
	spent.Store(minimalKeys)
	heard, retaken := 0, 0
	defer func() {
		t.Logf("%s: %d of %d grants heard", history.LostRetaken, retaken, heard)
		if !t.Failed() && (retaken == 0 || retaken >= heard) {
			t.Errorf("%s %d of %d grants heard; the test needs some of each", history.LostRetaken, retaken, heard)
		}
	}()
	for seed := uint64(1); seed <= 4; seed++ {
		ops := faultyHistory(seed)
		whole := noElapsed(Check(context.Background(), ops, Options{minimized: spent}))
		if whole.Verdict != Invalid {
			t.Fatalf("seed %d: the faulty history is %s; the test needs violations", seed, whole.Verdict)
		}
		if c, _ := whole.Checker(opsPerKey.Name()); c.Figures["most_ops_on_a_key"] < 2 || c.Figures["keyed_ops"] <= c.Figures["most_ops_on_a_key"] {
			t.Fatalf("seed %d: the throwaway checker found %v; the test needs ops on several keys", seed, c.Figures)
		}
		for _, name := range append(Of(MutualExclusion), Of(LeaseContract)...) {
			if c, _ := whole.Checker(name); name != "liveness" && c.ViolationCount == 0 {
				t.Fatalf("seed %d: %s found nothing; the test needs its violations", seed, name)
			}
		}
		if whole.Coverage[Hit("pause-redis")]+whole.Coverage[Hit("kill-redis")] == 0 {
			t.Fatalf("seed %d: no fault window hit a lease: %v", seed, whole.Coverage)
		}
		// A figure read from the servers is the window's: counted once,
		// however many buckets hold the window.
		var granted int
		for _, op := range ops {
			if op.F == history.Nemesis && op.Value.Phase == "stop" {
				granted += int(op.Value.Events[history.GrantedByDeposed])
			}
		}
		if granted == 0 || whole.Coverage[history.GrantedByDeposed] != granted {
			t.Fatalf("seed %d: %s %d, want the stop ops' %d (not 0)", seed, history.GrantedByDeposed, whole.Coverage[history.GrantedByDeposed], granted)
		}
		// lost_retaken is judged by key, in the part that holds it: the
		// test needs some grants counted and some not.
		for _, op := range ops {
			if op.F == history.Nemesis && op.Value.Phase == "stop" {
				heard += len(op.Value.Retaken)
			}
		}
		retaken += whole.Coverage[history.LostRetaken]
		for _, buckets := range []int{1, 2, 7, 64} {
			got := noElapsed(partitionCheck(t, ops, buckets, Options{minimized: spent}))
			if !reflect.DeepEqual(got, whole) {
				for i := range whole.Checkers {
					if !reflect.DeepEqual(got.Checkers[i], whole.Checkers[i]) {
						t.Errorf("seed %d, %d buckets, %s:\n got %+v\nwant %+v", seed, buckets, whole.Checkers[i].Name, got.Checkers[i], whole.Checkers[i])
					}
				}
				if !reflect.DeepEqual(got.Coverage, whole.Coverage) {
					t.Errorf("seed %d, %d buckets: coverage\n got %v\nwant %v", seed, buckets, got.Coverage, whole.Coverage)
				}
				t.Fatalf("seed %d, %d buckets: verdict %s, want %s", seed, buckets, got.Verdict, whole.Verdict)
			}
		}
	}
}

// TestPartition_ValidAndEmpty: a valid history stays valid split, and a
// history of only faults is checked as one (stats finds nothing acquired).
func TestPartition_ValidAndEmpty(t *testing.T) {
	ops := genHistory(3, 30, 5, 300, 100*time.Millisecond)
	if got := partitionCheck(t, ops, 9, Options{}); got.Verdict != Valid {
		t.Fatalf("valid history split in 9: %s %+v", got.Verdict, got.Checkers)
	}
	nem := []history.Op{{Process: history.NemesisProcess, F: history.Nemesis, Type: history.Info, Call: 1, Return: 2,
		Value: &history.NemesisValue{Fault: "pause-redis", Phase: "start"}}}
	got := noElapsed(partitionCheck(t, nem, 5, Options{}))
	if want := noElapsed(Check(context.Background(), nem, Options{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("faults only:\n got %+v\nwant %+v", got, want)
	}
}

// TestSpill_RoundTrip: every field an op can carry comes back from the
// spill format as it went in, extremes included.
func TestSpill_RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ops []history.Op
	for i := range 2000 {
		call := r.Int64N(history.MaxTime)
		op := history.Op{Index: int64(i), Process: r.IntN(1 << 20), F: spillFuncs[r.IntN(4)], Type: spillTypes[r.IntN(3)],
			Key: "k" + strconv.Itoa(r.IntN(50)), Token: strconv.FormatUint(r.Uint64(), 16), Fence: r.Int64N(1 << 62),
			TTLms: r.Int64N(history.MaxTTLms) + 1, Call: call, Return: call + r.Int64N(history.MaxTime-call+1)}
		if r.IntN(3) == 0 {
			op.Scheduled = r.Int64N(call + 1)
		}
		if r.IntN(4) == 0 {
			op.Error = "redis: " + strconv.Itoa(r.IntN(5))
		}
		op.CutShort, op.Late = r.IntN(2) == 0, r.IntN(2) == 0
		if r.IntN(2) == 0 {
			op.ClockBound = r.Int64N(history.MaxClockBound + 1)
		}
		if r.IntN(2) == 0 {
			op.Mode = history.ExtendAdd
		}
		if r.IntN(2) == 0 {
			op.Permits = r.IntN(history.MaxPermits) + 1
		}
		if r.IntN(2) == 0 {
			op.WaitMs, op.WakeMs, op.Tried = r.Int64N(history.MaxTTLms)+1, r.Int64N(history.MaxTTLms)+1, op.Call+r.Int64N(op.Return-op.Call+1)
		}
		op.Access = spillAccess[r.IntN(len(spillAccess))]
		ops = append(ops, op)
	}
	p, err := NewPartition(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add(ops); err != nil {
		t.Fatal(err)
	}
	var back []history.Op
	for b := range 3 {
		got, err := p.Bucket(b)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, got...)
	}
	slices.SortFunc(back, func(a, b history.Op) int { return cmpInt(a.Index, b.Index) })
	if !reflect.DeepEqual(back, ops) {
		for i := range ops {
			if i >= len(back) || !reflect.DeepEqual(back[i], ops[i]) {
				t.Fatalf("op %d:\n got %+v\nwant %+v", i, back[min(i, len(back)-1)], ops[i])
			}
		}
		t.Fatalf("%d ops back, want %d", len(back), len(ops))
	}
	dir := p.dir
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("spill dir %s still there after Close: %v", dir, err)
	}
}

// TestRemoveSpills: a process interrupted twice removes the spill files
// of the checks still running (RemoveSpills), and leaves closed ones
// alone.
func TestRemoveSpills(t *testing.T) {
	root := t.TempDir()
	a, err := NewPartition(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPartition(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(root, "not-a-spill")
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	RemoveSpills()
	if _, err := os.Stat(a.dir); !os.IsNotExist(err) {
		t.Errorf("spill dir %s of an open partition still there: %v", a.dir, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("RemoveSpills removed %s, not a spill dir: %v", keep, err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close after RemoveSpills: %v", err)
	}
}

// BenchmarkPartition_1M is checking 1M ops in bounded memory, against
// BenchmarkCheck_1M (the whole history held): the cost of the spill.
func BenchmarkPartition_1M(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	b.ReportMetric(float64(len(ops)), "ops")
	b.ResetTimer()
	for range b.N {
		p, err := NewPartition(b.TempDir(), 8)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Add(ops); err != nil {
			b.Fatal(err)
		}
		rep, err := p.Check(context.Background(), Options{}, nil)
		if err != nil || rep.Verdict != Valid {
			b.Fatalf("%v %s", err, rep.Verdict)
		}
		_ = p.Close()
	}
}

// TestCheck_Deterministic: the same history gets the same findings, to
// the word, every time (porcupine hands partial linearizations over in a
// map's order; the explanation must not depend on it).
func TestCheck_Deterministic(t *testing.T) {
	ops := faultyHistory(1)
	spent := new(atomic.Int64) // no fewest ops: noElapsed leaves them out
	spent.Store(minimalKeys)
	first := noElapsed(Check(context.Background(), ops, Options{minimized: spent}))
	for range 8 {
		if again := noElapsed(Check(context.Background(), ops, Options{minimized: spent})); !reflect.DeepEqual(again, first) {
			t.Fatal("a second check of the same history found something else")
		}
	}
}

// TestPartition_ZeroMeansZero: a clock tolerance and a horizon of exactly
// 0 stay 0 through the partitioned check, which resolves options twice
// (once for the partition, once in each checker): B's acquire 10 ms before
// A's lease expires is two holders with no tolerance, and allowed by the
// default 25 ms.
func TestPartition_ZeroMeansZero(t *testing.T) {
	ops := []history.Op{covOp(history.Acquire, history.OK, 1, "a", 0, 1), covOp(history.Acquire, history.OK, 2, "b", 90, 91)}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	if r := partitionCheck(t, ops, 1, Options{ClockTolerance: Exactly(0), InfoHorizon: Exactly(0)}); r.Verdict != Invalid {
		t.Errorf("tolerance 0: %s, want invalid", r.Verdict)
	}
	if r := partitionCheck(t, ops, 1, Options{}); r.Verdict != Valid {
		t.Errorf("default tolerance: %s, want valid", r.Verdict)
	}
	if o := (Options{ClockTolerance: None, InfoHorizon: None}).Resolved().Resolved(); o.ClockTolerance != 0 || o.InfoHorizon != 0 {
		t.Errorf("resolved twice: tolerance %v, horizon %v, want 0 and 0", o.ClockTolerance, o.InfoHorizon)
	}
}

// opsPerKey is a throwaway checker: how many keyed ops (summed over the
// parts) and the most on one key (the largest part's).
var opsPerKey = Spec{Check: Func("ops_per_key", func(_ context.Context, ops []history.Op, _ Options) Result {
	per := map[string]int64{}
	var n int64
	for _, op := range ops {
		if op.F != history.Nemesis {
			per[op.Key]++
			n++
		}
	}
	most := int64(0)
	for _, c := range per {
		most = max(most, c)
	}
	return Result{Verdict: Valid, Figures: map[string]int64{"keyed_ops": n, "most_ops_on_a_key": most}}
}), Figures: map[string]FigureMerge{"keyed_ops": Sum, "most_ops_on_a_key": Max}}

// TestRegistry_FiguresDeclared: every figure a registered checker reports
// on a history that exercises each of them is declared in its Spec (how
// it merges across parts is part of the checker, not of its name).
func TestRegistry_FiguresDeclared(t *testing.T) {
	rep := Check(context.Background(), faultyHistory(1), Options{})
	for _, s := range All() {
		c, ok := rep.Checker(s.Name())
		if !ok {
			t.Errorf("%s: registered but not run", s.Name())
		}
		for fig := range c.Figures {
			if _, ok := s.Figures[fig]; !ok {
				t.Errorf("%s: figure %q not declared in its Spec", s.Name(), fig)
			}
		}
	}
}
