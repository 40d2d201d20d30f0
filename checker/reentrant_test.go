package checker

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// reentrantModelSays decides h with the reentrant model, with the
// reductions linearizableReentrant applies (reduced) or porcupine alone
// on the whole key.
func reentrantModelSays(t testing.TB, h oracleHistory, reduced bool) (Verdict, int, int) {
	rm := reentrantModel{leaseModel{eps: int64(h.eps)}}
	lops := reentrantLockOps(h)
	var r porcupine.CheckResult
	dropped, segs := 0, 1
	if reduced {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var judged []*lockOp
		r, judged, dropped = decideReentrant(ctx, stopOnDone(ctx, rm.porcupine()), lops, rm.m.eps)
		segs = len(reentrantCuts(judged, rm.m.eps))
	} else {
		r = porcupine.CheckOperationsTimeout(rm.porcupine(), toPorcupine(lops), time.Minute)
	}
	switch r {
	case porcupine.Ok:
		return Valid, dropped, segs
	case porcupine.Illegal:
		return Invalid, dropped, segs
	}
	t.Fatalf("the reentrant model ran out of time on:\n%s", h)
	return Unknown, 0, 0
}

// reentrantLockOps are h's lock ops as the model takes them.
func reentrantLockOps(h oracleHistory) []*lockOp {
	var ptrs []*history.Op
	for i := range h.ops {
		if h.ops[i].F != history.Write {
			ptrs = append(ptrs, &h.ops[i])
		}
	}
	return toLockOps(ptrs, int64(h.horizon))
}

// TestReentrant_AgreesWithOracle: the reentrant model, with its
// reductions (refusals dropped, cuts) and porcupine alone, says what the
// brute-force oracle says on simulated correct reentrant locks (every
// one valid) and their mutations (both ways), 0 disagreements; the
// histories include re-entries granted on leases that had ended (a new
// count of 1), refusals dropped and keys cut.
func TestReentrant_AgreesWithOracle(t *testing.T) {
	n := shapeCases(t)
	verdicts := map[Verdict]int{}
	var restarted, dropped, split, paired, dominated int
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 83))
		h := simReentrant(r, 4+r.IntN(5))
		for k, h := range []oracleHistory{h, mutateReentrant(r, h)} {
			want := oracleReentrantSays(h)
			if k == 0 && want != Valid {
				t.Fatalf("seed %d: the simulated correct lock is %s by the oracle:\n%s", seed, want, h)
			}
			for _, reduced := range []bool{true, false} {
				got, d, segs := reentrantModelSays(t, h, reduced)
				if got != want {
					t.Fatalf("seed %d: the model (reduced %v) says %s, the oracle %s:\n%s", seed, reduced, got, want, h)
				}
				if reduced && d > 0 {
					dropped++
				}
				if reduced && segs > 1 {
					split++
				}
			}
			verdicts[want]++
			if rest, _ := reentrantRefused(reentrantLockOps(h), int64(h.eps)); len(rest) > 0 {
				if _, d := dropDominatedRefusals(rest); d > 0 {
					dominated++
				}
			}
			if refuteByOwners(context.Background(), reentrantModel{leaseModel{eps: int64(h.eps)}}.porcupine(), reentrantLockOps(h), int64(h.eps)) != nil {
				paired++
			}
			if k == 0 && strings.HasSuffix(h.label, "restarting its count") {
				restarted++
			}
		}
	}
	t.Logf("%d histories (%d simulated, %d mutations): %d valid, %d invalid, 0 disagreements; %d simulated with a re-entry granted after its lease ended, %d with refusals dropped, %d cut, %d refuted by two owners, %d with dominated refusals dropped",
		2*n, n, n, verdicts[Valid], verdicts[Invalid], restarted, dropped, split, paired, dominated)
	if verdicts[Valid]-n < n/10 || verdicts[Invalid] < n/10 || restarted < n/100 || dropped < n/20 || split < n/20 || paired < n/20 || dominated < n/50 {
		t.Errorf("%d valid mutations, %d invalid, %d restarted counts, %d dropped, %d cut, %d refuted by two owners, of %d: too one-sided to prove anything",
			verdicts[Valid]-n, verdicts[Invalid], restarted, dropped, split, paired, n)
	}
}

// reentrantHistory builds a key's history from ops, numbering them, each
// acquire a reentrant one (its depth as given, 1 if none) of ttl 100 ms.
func reentrantHistory(ops ...history.Op) []history.Op {
	const ms = int64(time.Millisecond)
	for i := range ops {
		ops[i].Index, ops[i].Key = int64(i), "re"
		ops[i].Call, ops[i].Return = ops[i].Call*ms, ops[i].Return*ms
		if ops[i].F == history.Acquire {
			ops[i].TTLms, ops[i].Depth = 100, max(ops[i].Depth, 1)
		}
	}
	return ops
}

func reOp(p int, f history.Func, typ history.Type, tok string, depth int, call, ret int64) history.Op {
	return history.Op{Process: p, F: f, Type: typ, Token: tok, Depth: depth, Call: call, Return: ret}
}

// TestShapes_ReentrantByItsModel: a history whose acquires declare a
// depth is judged as a reentrant lock's by both guarantees' checkers: an
// owner's re-entry, its inner and outer sections, and another owner
// refused meanwhile and granted after are valid (one re-entry counted);
// the same with the inner release having freed the key (a release that
// deletes whatever the count), so the other owner is granted and writes
// while the outer section runs, is invalid at the resource and in the
// model, whose message names the grant it cannot place.
func TestShapes_ReentrantByItsModel(t *testing.T) {
	A, R, W := history.Acquire, history.Release, history.Write
	ok, fail := history.OK, history.Fail
	good := reentrantHistory(
		reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, A, ok, "o1", 2, 2, 3), reOp(0, W, ok, "o1", 0, 4, 10),
		reOp(1, A, fail, "o2", 1, 5, 6), reOp(0, R, ok, "o1", 0, 11, 12), reOp(0, W, ok, "o1", 0, 13, 20),
		reOp(1, A, fail, "o3", 1, 14, 15), reOp(0, R, ok, "o1", 0, 21, 22), reOp(1, A, ok, "o4", 1, 23, 24),
		reOp(1, W, ok, "o4", 0, 25, 30), reOp(1, R, ok, "o4", 0, 31, 32))
	opt := Options{}.Resolved()
	f := Check(context.Background(), good, opt)
	if f.Verdict != Valid {
		t.Fatalf("an owner's nested sections: got %s, want valid: %+v", f.Verdict, f)
	}
	m, _ := f.Checker("mutex")
	l, _ := f.Checker("linearizable")
	if m.Figures["reentries"] != 1 || !strings.Contains(m.Note, "reentrant") || !strings.Contains(l.Note, "reentrant") {
		t.Errorf("mutex figures %v note %q, linearizable note %q: want 1 re-entry and the shape named by both", m.Figures, m.Note, l.Note)
	}
	bad := reentrantHistory(
		reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, A, ok, "o1", 2, 2, 3), reOp(0, W, ok, "o1", 0, 4, 10),
		reOp(0, R, ok, "o1", 0, 11, 12), reOp(1, A, ok, "o2", 1, 13, 14), reOp(0, W, ok, "o1", 0, 15, 25),
		reOp(1, W, ok, "o2", 0, 16, 20), reOp(1, R, ok, "o2", 0, 21, 22), reOp(0, R, fail, "o1", 0, 26, 27))
	f = Check(context.Background(), bad, opt)
	m, _ = f.Checker("mutex")
	l, _ = f.Checker("linearizable")
	if f.Verdict != Invalid || m.Verdict != Invalid || m.Figures["double_holders"] != 1 {
		t.Fatalf("the inner release freed the key: got %s, mutex %s with %v; want invalid, one double holder", f.Verdict, m.Verdict, m.Figures)
	}
	if l.Verdict != Invalid || len(l.Violations) == 0 || !strings.HasPrefix(l.Violations[0].Message, "re: no timeline of a reentrant lock goes on past #4 ") {
		t.Fatalf("linearizable: got %s %+v, want invalid past #4 (o2's grant while o1 holds one)", l.Verdict, l.Violations)
	}
}

// TestReentrant_AtTheResource: one owner's nested sections may overlap,
// two owners' never, and the lease contract's allowance (a re-entry
// granted after its lease ended starts a count of 1, so its release frees
// the key under the outer section) is caught at the resource alone.
func TestReentrant_AtTheResource(t *testing.T) {
	A, R, W := history.Acquire, history.Release, history.Write
	ok, fail := history.OK, history.Fail
	nested := reentrantHistory(
		reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, A, ok, "o1", 2, 2, 3), reOp(0, W, ok, "o1", 0, 4, 20),
		reOp(0, W, ok, "o1", 0, 5, 10), reOp(0, R, ok, "o1", 0, 21, 22), reOp(0, R, ok, "o1", 0, 23, 24))
	if r := Reentrant(nested); r.Verdict != Valid {
		t.Errorf("one owner's nested sections: got %s %v, want valid", r.Verdict, r.Violations)
	}
	two := reentrantHistory(reOp(0, W, ok, "o1", 0, 4, 20), reOp(1, W, ok, "o2", 0, 5, 10))
	if r := Reentrant(two); r.Verdict != Invalid || r.Figures["double_holders"] != 1 || !strings.Contains(r.Violations[0].Message, "two owners on re") {
		t.Errorf("two owners' sections overlapping: got %s %v, want invalid with one double holder named", r.Verdict, r.Violations)
	}
	sameTokenTwoClients := reentrantHistory(reOp(0, W, ok, "o1", 0, 4, 20), reOp(1, W, ok, "o1", 0, 5, 10))
	if r := Reentrant(sameTokenTwoClients); r.Verdict != Invalid {
		t.Errorf("two clients handed one owner's token: got %s, want invalid (a lease is the client's and its token)", r.Verdict)
	}
	// o1's lease (100 ms) ended before its re-entry at 150 ms: a new
	// lease of one hold, whose release frees the key under the outer
	// section; o2 is granted and writes while o1 writes on.
	restarted := reentrantHistory(
		reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, W, ok, "o1", 0, 2, 10), reOp(0, A, ok, "o1", 2, 150, 151),
		reOp(0, W, ok, "o1", 0, 152, 160), reOp(0, R, ok, "o1", 0, 161, 162), reOp(1, A, ok, "o2", 1, 163, 164),
		reOp(1, W, ok, "o2", 0, 165, 180), reOp(0, W, ok, "o1", 0, 165, 175), reOp(1, R, ok, "o2", 0, 181, 182),
		reOp(0, R, fail, "o1", 0, 176, 177))
	f := Check(context.Background(), restarted, Options{}.Resolved())
	l, _ := f.Checker("linearizable")
	m, _ := f.Checker("mutex")
	if l.Verdict != Valid || m.Verdict != Invalid {
		t.Errorf("a re-entry after its lease ended: linearizable %s %v, mutex %s; want valid (the contract allows it) and invalid at the resource",
			l.Verdict, l.Violations, m.Verdict)
	}
}

// TestReentrant_SpillKeepsDepth: a part of a reentrant history read back
// from its spill file is still a reentrant lock's, depths as written.
func TestReentrant_SpillKeepsDepth(t *testing.T) {
	A, ok := history.Acquire, history.OK
	ops := reentrantHistory(reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, A, ok, "o1", 3, 2, 3))
	p, err := NewPartition(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Add(ops); err != nil {
		t.Fatal(err)
	}
	got, err := p.Bucket(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Depth != 1 || got[1].Depth != 3 || !HistoryReentrant(got) {
		t.Fatalf("read back %+v, want depths 1 and 3", got)
	}
}

// TestReentrant_CrashAfterInnerRelease: an owner that released its
// inner hold and died before its outer release left its lease abandoned
// (abandoned_tried counts the next owner's try after it expired); one
// that released both holds did not.
func TestReentrant_CrashAfterInnerRelease(t *testing.T) {
	A, R := history.Acquire, history.Release
	ok := history.OK
	ops := []history.Op{reOp(0, A, ok, "o1", 1, 0, 1), reOp(0, A, ok, "o1", 2, 2, 3), reOp(0, R, ok, "o1", 0, 10, 11),
		reOp(1, A, ok, "o2", 1, 300, 301)}
	if got := CoverageOf(reentrantHistory(ops...), Options{}.Resolved())[AbandonedTried]; got != 1 {
		t.Errorf("died after its inner release: abandoned_tried %d, want 1", got)
	}
	ops = append(ops[:3], reOp(0, R, ok, "o1", 0, 12, 13), ops[3])
	if got := CoverageOf(reentrantHistory(ops...), Options{}.Resolved())[AbandonedTried]; got != 0 {
		t.Errorf("released both holds: abandoned_tried %d, want 0", got)
	}
}
