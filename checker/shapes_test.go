package checker

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// semaphoreHistory is n clients each granted a permit of a key of k at
// once (200 ms leases, written in their sections together), and then a
// client refused while they hold.
func semaphoreHistory(k, n int) []history.Op {
	var ops []history.Op
	add := func(op history.Op) {
		op.Index, op.Key = int64(len(ops)), "sem"
		if op.F == history.Acquire {
			op.TTLms, op.Permits = 200, k
		}
		ops = append(ops, op)
	}
	ms := int64(1e6)
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Acquire, Type: history.OK, Token: tok, Call: int64(p) * ms, Return: int64(p)*ms + ms/2})
	}
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Write, Type: history.OK, Token: tok, Call: 10 * ms, Return: 20 * ms})
	}
	add(history.Op{Process: n, F: history.Acquire, Type: history.Fail, Call: 30 * ms, Return: 31 * ms})
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Release, Type: history.OK, Token: tok, Call: 40 * ms, Return: 41 * ms})
	}
	return ops
}

// TestShapes_SemaphoreByItsModel: a history of acquires with permits 3
// is judged as a semaphore of 3 by both guarantees' checkers, under their
// names: 3 holders and a refusal are valid (peak 3 of 3, the refusal's
// chance counted); 4 holders are invalid at the resource and in the
// model, whose message names the key and the op.
func TestShapes_SemaphoreByItsModel(t *testing.T) {
	opt := Options{}.Resolved()
	f := Check(context.Background(), semaphoreHistory(3, 3), opt)
	if f.Verdict != Valid {
		t.Fatalf("3 holders of 3 permits: got %s, want valid: %+v", f.Verdict, f)
	}
	m, _ := f.Checker("mutex")
	if m.Figures["peak_holders"] != 3 || m.Figures["permits"] != 3 || !strings.Contains(m.Note, "semaphore of 3 permits") {
		t.Errorf("mutex checker: figures %v note %q, want peak_holders 3 of permits 3 and the shape named", m.Figures, m.Note)
	}
	if got := f.Coverage[AllPermitsTried]; got != 1 {
		t.Errorf("all_permits_tried: got %d, want 1 (the refusal)", got)
	}
	f = Check(context.Background(), semaphoreHistory(3, 4), opt)
	if f.Verdict != Invalid {
		t.Fatalf("4 holders of 3 permits: got %s, want invalid", f.Verdict)
	}
	m, _ = f.Checker("mutex")
	if m.Figures["over_admitted"] == 0 || m.Figures["peak_holders"] != 4 {
		t.Errorf("mutex checker: figures %v, want over_admitted > 0 and peak_holders 4", m.Figures)
	}
	l, _ := f.Checker("linearizable")
	if l.Verdict != Invalid || len(l.Violations) == 0 {
		t.Fatalf("linearizable: got %s, want invalid with a violation", l.Verdict)
	}
	if msg := l.Violations[0].Message; !strings.HasPrefix(msg, "sem: no timeline of a semaphore of 3 permits goes on past #3 ") {
		t.Errorf("violation: got %q, want the key and the 4th grant (#3) named", msg)
	}
	// A mutex's history has no all_permits_tried and the mutex's figures.
	mutex := semaphoreHistory(0, 1)
	f = Check(context.Background(), mutex, opt)
	m, _ = f.Checker("mutex")
	if _, ok := f.Coverage[AllPermitsTried]; ok || m.Figures["peak_holders"] != 0 || f.Verdict != Valid {
		t.Errorf("mutex history: coverage %v, mutex figures %v, verdict %s", f.Coverage, m.Figures, f.Verdict)
	}
}

// TestSurelyRefused_AgreesWithOracle: the semaphore's model on what
// surelyRefused leaves says what the oracle says of the whole, on
// simulated correct semaphores and their mutations, with some refusals
// dropped.
func TestSurelyRefused_AgreesWithOracle(t *testing.T) {
	n := shapeCases(t)
	verdicts, dropped := map[Verdict]int{}, 0
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 79))
		h := simShape(r, 6+r.IntN(5), 1+r.IntN(3), false)
		for _, h := range []shapeHistory{h, mutateShape(r, h)} {
			want := oracleShapeSays(h)
			m := newPermitModel(h.shape(), int64(h.eps))
			ops, d := surelyRefused(h.permitOps(), h.k, int64(h.eps))
			got := Unknown
			switch checkPermits(context.Background(), m, ops) {
			case porcupine.Ok:
				got = Valid
			case porcupine.Illegal:
				got = Invalid
			}
			if got != want {
				t.Fatalf("seed %d: the model on the %d ops left (%d dropped) says %s, the oracle of the whole %s:\n%s", seed, len(ops), d, got, want, h)
			}
			verdicts[want]++
			if d > 0 {
				dropped++
			}
		}
	}
	t.Logf("%d histories: %d valid, %d invalid, %d with refusals dropped, 0 disagreements", 2*n, verdicts[Valid], verdicts[Invalid], dropped)
	if dropped < n/20 || verdicts[Invalid] < n/10 {
		t.Errorf("%d histories with refusals dropped, %d invalid, of %d: too few to prove anything", dropped, verdicts[Invalid], 2*n)
	}
}

// TestShapes_RecordedShape: a recorded shape decides what a history is
// judged as, over what its acquires declare; one no registry holds makes
// both guarantees' checkers unknown, naming it, never a verdict under
// another shape's rules.
func TestShapes_RecordedShape(t *testing.T) {
	ops := semaphoreHistory(3, 3)
	opt := Options{}.Resolved()
	if sh, err := shapeOf(ops, opt); err != nil || sh.Name != "semaphore" {
		t.Fatalf("unrecorded: shape %q (%v), want the semaphore its acquires declare", sh.Name, err)
	}
	opt.Shape = "semaphore"
	if r := Linearizable(context.Background(), ops, opt); r.Verdict != Valid {
		t.Errorf("recorded semaphore: linearizable %s (%s), want valid", r.Verdict, r.Note)
	}
	opt.Shape = "mutex"
	if r := mutexSpec.Check.Check(context.Background(), ops, opt); r.Verdict != Invalid {
		t.Errorf("recorded mutex over 3 holders: mutex %s, want invalid (the recorded shape's rule)", r.Verdict)
	}
	opt.Shape = "nobody-registered-it"
	for _, r := range []Result{Linearizable(context.Background(), ops, opt), mutexSpec.Check.Check(context.Background(), ops, opt)} {
		if r.Verdict != Unknown || !strings.Contains(r.Note, `"nobody-registered-it" is not one this lockcheck knows`) {
			t.Errorf("%s of an unregistered shape: %s (%q), want unknown naming it", r.Name, r.Verdict, r.Note)
		}
	}
}
