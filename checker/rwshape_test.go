package checker

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// readWriteHistory is n readers of one key granted at once (200 ms
// leases, written in their sections together), then a writer whose
// acquire is refused while they hold (granted, if writerIn: the mistake)
// and writes beside them, and a reader, refused while the writer holds
// if writerIn.
func readWriteHistory(n int, writerIn bool) []history.Op {
	var ops []history.Op
	add := func(op history.Op) {
		op.Index, op.Key = int64(len(ops)), "rw"
		if op.F == history.Acquire {
			op.TTLms = 200
		}
		ops = append(ops, op)
	}
	ms := int64(1e6)
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Acquire, Type: history.OK, Token: tok, Access: history.AccessRead, Call: int64(p) * ms, Return: int64(p)*ms + ms/2})
	}
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Write, Type: history.OK, Token: tok, Call: 10 * ms, Return: 40 * ms})
	}
	w := history.Op{Process: n, F: history.Acquire, Type: history.Fail, Access: history.AccessWrite, Call: 20 * ms, Return: 21 * ms}
	if writerIn {
		w.Type, w.Token = history.OK, "w"
	}
	add(w)
	if writerIn {
		add(history.Op{Process: n, F: history.Write, Type: history.OK, Token: "w", Call: 22 * ms, Return: 30 * ms})
		add(history.Op{Process: n + 1, F: history.Acquire, Type: history.Fail, Access: history.AccessRead, Call: 25 * ms, Return: 26 * ms})
	}
	for p := range n {
		tok := string(rune('a' + p))
		add(history.Op{Process: p, F: history.Release, Type: history.OK, Token: tok, Call: 50 * ms, Return: 51 * ms})
	}
	return ops
}

// TestShapes_ReadWriteByItsModel: a history whose acquires name their
// access is judged as a read-write lock by both guarantees' checkers,
// under their names: readers in their sections together and a writer
// refused are valid (peak 3, the writer's chance counted); a writer
// granted beside them is invalid at the resource and in the model, and
// the reader refused while it held counts its chance.
func TestShapes_ReadWriteByItsModel(t *testing.T) {
	opt := Options{}.Resolved()
	f := Check(context.Background(), readWriteHistory(3, false), opt)
	if f.Verdict != Valid {
		t.Fatalf("3 readers and a writer refused: got %s, want valid: %+v", f.Verdict, f)
	}
	m, _ := f.Checker("mutex")
	if m.Figures["peak_holders"] != 3 || !strings.Contains(m.Note, "read-write lock") {
		t.Errorf("mutex checker: figures %v note %q, want peak_holders 3 and the shape named", m.Figures, m.Note)
	}
	if got := f.Coverage[WriterTriedOverReaders]; got != 1 {
		t.Errorf("writer_tried_over_readers: got %d, want 1 (the refused writer)", got)
	}
	if got, ok := f.Coverage[ReaderTriedOverWriter]; !ok || got != 0 {
		t.Errorf("reader_tried_over_writer: got %d (present %v), want 0", got, ok)
	}
	if _, ok := f.Coverage[AllPermitsTried]; ok {
		t.Errorf("a read-write lock's history has all_permits_tried: %v", f.Coverage)
	}
	f = Check(context.Background(), readWriteHistory(3, true), opt)
	if f.Verdict != Invalid {
		t.Fatalf("a writer granted over 3 readers: got %s, want invalid", f.Verdict)
	}
	m, _ = f.Checker("mutex")
	if m.Figures["writer_overlaps"] == 0 || m.Verdict != Invalid {
		t.Errorf("mutex checker: %s, figures %v, want invalid with writer_overlaps > 0", m.Verdict, m.Figures)
	}
	l, _ := f.Checker("linearizable")
	if l.Verdict != Invalid || len(l.Violations) == 0 || !strings.HasPrefix(l.Violations[0].Message, "rw: no timeline of a read-write lock goes on past #6 ") {
		t.Fatalf("linearizable: got %s %v, want invalid at the writer's grant (#6)", l.Verdict, l.Violations)
	}
	if got := f.Coverage[ReaderTriedOverWriter]; got != 1 {
		t.Errorf("reader_tried_over_writer: got %d, want 1 (the reader refused while the writer held)", got)
	}
	// A mutex's history has neither figure.
	f = Check(context.Background(), semaphoreHistory(0, 1), opt)
	for _, name := range []string{WriterTriedOverReaders, ReaderTriedOverWriter} {
		if _, ok := f.Coverage[name]; ok {
			t.Errorf("a mutex's history has %s: %v", name, f.Coverage)
		}
	}
}

// TestSurelyRefusedRW_AgreesWithOracle: the read-write model on what
// surelyRefusedRW leaves says what the oracle says of the whole, on
// simulated correct read-write locks (writers preferred or not) and
// their mutations, with some refusals dropped.
func TestSurelyRefusedRW_AgreesWithOracle(t *testing.T) {
	n := shapeCases(t)
	verdicts, dropped, apartCases := map[Verdict]int{}, 0, 0
	for seed := 0; seed < n; seed++ {
		// The histories of TestReadWrite_AgreesWithOracle (its stream).
		r := rand.New(rand.NewPCG(uint64(seed), 73))
		h := simShape(r, 4+r.IntN(5), 0, r.IntN(2) == 0)
		for _, h := range []shapeHistory{h, mutateShape(r, h)} {
			want := oracleShapeSays(h)
			m := newPermitModel(h.shape(), int64(h.eps))
			ops, d := surelyRefusedRW(h.writerPref)(h.permitOps(), int64(h.eps))
			rest, apart := readersApart(ops, int64(h.eps))
			if len(apart) > 0 {
				apartCases++
			}
			verdict, _ := checkParts(context.Background(), m, append(apart, rest))
			got := Unknown
			switch verdict {
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
	t.Logf("%d histories: %d valid, %d invalid, %d with refusals dropped, %d with readers judged apart, 0 disagreements", 2*n, verdicts[Valid], verdicts[Invalid], dropped, apartCases)
	if dropped < n/20 || apartCases < n/20 || verdicts[Invalid] < n/10 {
		t.Errorf("%d histories with refusals dropped, %d with readers apart, %d invalid, of %d: too few to prove anything", dropped, apartCases, verdicts[Invalid], 2*n)
	}
}
