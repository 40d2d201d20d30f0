package checker

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

func TestGenHistory_IsValid(t *testing.T) {
	ops := genHistory(1, 20, 10, 500, 100*time.Millisecond)
	rep := Check(context.Background(), ops, Options{})
	if rep.Verdict != Valid {
		t.Fatalf("generated history: %s %+v", rep.Verdict, rep.Checkers)
	}
	// And one stolen lease makes it invalid: the generator's histories are
	// not trivially valid.
	stolen := false
	for i := len(ops) / 2; i < len(ops); i++ {
		if ops[i].F == history.Acquire && ops[i].Type == history.Fail {
			ops[i].Type, ops[i].Token, stolen = history.OK, "thief", true
			break
		}
	}
	if !stolen {
		t.Fatal("no failed acquire to turn into a theft")
	}
	if rep := Linearizable(context.Background(), ops, Options{}.Resolved()); rep.Verdict != Invalid {
		t.Errorf("history with a stolen lease: got %s, want invalid", rep.Verdict)
	}
}

// lin returns the linearizable checker with opt, for benchCheck.
func lin(opt Options) func([]history.Op) Result {
	return func(ops []history.Op) Result { return Linearizable(context.Background(), ops, opt.Resolved()) }
}

func benchCheck(b *testing.B, ops []history.Op, check func([]history.Op) Result) {
	benchCheckWant(b, ops, Valid, check)
}

func benchCheckWant(b *testing.B, ops []history.Op, want Verdict, check func([]history.Op) Result) {
	b.ReportMetric(float64(len(ops)), "ops")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := check(ops)
		if r.Verdict != want {
			b.Fatalf("verdict %s: %+v", r.Verdict, r.Violations)
		}
	}
}

// BenchmarkLinearizable_1M_1000Keys is the target: under 10s on 2 cores.
func BenchmarkLinearizable_1M_1000Keys(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	benchCheck(b, ops, lin(Options{}))
}

// BenchmarkLinearizable_1M_1000Keys_NoReduction is its baseline.
func BenchmarkLinearizable_1M_1000Keys_NoReduction(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	benchCheck(b, ops, lin(Options{skip: skipAll, Timeout: 120 * time.Second}))
}

// BenchmarkLinearizable_100k_HotKey: 50 clients on one key.
func BenchmarkLinearizable_100k_HotKey(b *testing.B) {
	ops := genHistory(2, 1, 50, 100_000, time.Second)
	benchCheck(b, ops, lin(Options{}))
}

// BenchmarkLinearizable_100k_HotKey_NoReduction is the baseline: porcupine
// on the whole key, no reductions.
func BenchmarkLinearizable_100k_HotKey_NoReduction(b *testing.B) {
	ops := genHistory(2, 1, 50, 100_000, time.Second)
	benchCheck(b, ops, lin(Options{skip: skipAll, Timeout: 60 * time.Second}))
}

// withInfo turns every 20th op into info, as lost replies do: a correct
// lock's history stays valid (each such op did take effect, or not).
func withInfo(ops []history.Op) []history.Op {
	for i := range ops {
		if i%20 == 7 && ops[i].F != history.Write {
			ops[i].Type = history.Info
			if ops[i].Token == "" {
				ops[i].Token = "lost-" + strconv.Itoa(i)
			}
		}
	}
	return ops
}

// BenchmarkLinearizable_100k_HotKey_5pctInfo: the hot key with 5% of its
// ops indeterminate, under the default horizon and timeout.
func BenchmarkLinearizable_100k_HotKey_5pctInfo(b *testing.B) {
	ops := withInfo(genHistory(2, 1, 50, 100_000, time.Second))
	benchCheck(b, ops, lin(Options{}))
}

// hotKeyWithTheft is the hot key with one failed acquire, halfway
// through, turned into a success while another client holds the lease:
// two holders, as check-then-set makes them.
func hotKeyWithTheft() []history.Op {
	ops := genHistory(2, 1, 50, 100_000, time.Second)
	for i := len(ops) / 2; i < len(ops); i++ {
		if ops[i].F == history.Acquire && ops[i].Type == history.Fail {
			ops[i].Type, ops[i].Token = history.OK, "thief"
			return ops
		}
	}
	panic("no failed acquire in the generated hot key")
}

// BenchmarkLinearizable_100k_HotKey_Invalid: refuting the hot key.
func BenchmarkLinearizable_100k_HotKey_Invalid(b *testing.B) {
	ops := hotKeyWithTheft()
	benchCheckWant(b, ops, Invalid, lin(Options{}))
}

// BenchmarkLinearizable_100k_HotKey_Invalid_NoReduction: porcupine alone,
// bounded at 60s (it ends unknown).
func BenchmarkLinearizable_100k_HotKey_Invalid_NoReduction(b *testing.B) {
	ops := hotKeyWithTheft()
	benchCheckWant(b, ops, Unknown, lin(Options{skip: skipAll, Timeout: 60 * time.Second}))
}

// BenchmarkCheck_1M is every checker over a 1,000,000-op history.
func BenchmarkCheck_1M(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := Check(context.Background(), ops, Options{}); r.Verdict != Valid {
			b.Fatal(r.Verdict)
		}
	}
}

// BenchmarkReadAndCheck_1M includes decoding the history file.
func BenchmarkReadAndCheck_1M(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	var buf bytes.Buffer
	w := history.NewWriter(&buf, 0)
	for _, op := range ops {
		_, _ = w.Write(op)
	}
	w.Close()
	data := buf.Bytes()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ops, err := history.Read(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if r := Check(context.Background(), ops, Options{}); r.Verdict != Valid {
			b.Fatal(r.Verdict)
		}
	}
}

func BenchmarkMutex_1M(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	// Writes: one per ok acquire, inside the lease.
	var ws []history.Op
	for _, op := range ops {
		if op.F == history.Acquire && op.Type == history.OK {
			ws = append(ws, history.Op{Index: int64(len(ws)), Process: op.Process, F: history.Write, Type: history.OK,
				Key: op.Key, Token: op.Token, Call: op.Return, Return: op.Return + int64(time.Millisecond)})
		}
	}
	b.ReportAllocs()
	benchCheck(b, ws, Mutex)
}

// BenchmarkCoverage_1M is the coverage figures over the 1,000,000-op
// history of BenchmarkCheck_1M (of which it is a part; BenchmarkMutex_1M
// is the cheapest checker, for scale).
func BenchmarkCoverage_1M(b *testing.B) {
	ops := genHistory(1, 1000, 5, 1000, time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c := CoverageOf(ops, Options{}.Resolved()); c[Contended] == 0 {
			b.Fatal("no contended acquire in a contended history")
		}
	}
}
