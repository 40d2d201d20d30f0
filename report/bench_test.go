package report

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// bigHistory is n ops of acquire/write/release cycles by 200 clients over
// 1,000 keys, with failed acquires between, over about 60 s.
func bigHistory(n int) []history.Op {
	r := rand.New(rand.NewPCG(1, 2))
	ops := make([]history.Op, 0, n)
	t := int64(0)
	for len(ops) < n {
		p := r.IntN(200)
		key := "lock:" + strconv.Itoa(r.IntN(1000))
		tok := strconv.Itoa(len(ops))
		lat := int64(100_000 + r.IntN(2_000_000))
		t += 60_000
		if r.IntN(4) > 0 {
			ops = append(ops, history.Op{Process: p, F: history.Acquire, Type: history.Fail, Key: key, TTLms: 1000, Call: t, Return: t + lat})
			continue
		}
		ops = append(ops,
			history.Op{Process: p, F: history.Acquire, Type: history.OK, Key: key, Token: tok, TTLms: 1000, Call: t, Return: t + lat},
			history.Op{Process: p, F: history.Write, Type: history.OK, Key: key, Token: tok, Call: t + lat, Return: t + lat + 5_000_000},
			history.Op{Process: p, F: history.Release, Type: history.OK, Key: key, Token: tok, Call: t + lat + 5_000_000, Return: t + 2*lat + 5_000_000})
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

// BenchmarkWrite_1M: the report (html, junit, hgrm) of a 1,000,000-op
// history with violations to draw. Target: under 5 s.
func BenchmarkWrite_1M(b *testing.B) {
	ops := bigHistory(1_000_000)
	rep := checker.Findings{Verdict: checker.Invalid, Checkers: []checker.Result{checker.Mutex(ops)}}
	// Twenty violations across the run, for the timelines.
	for i := 0; i < 20; i++ {
		op := ops[i*len(ops)/20]
		rep.Checkers[0].Violations = append(rep.Checkers[0].Violations,
			checker.Violation{Key: op.Key, Message: "synthetic", Window: [2]int64{op.Call, op.Return + 10_000_000}})
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Write(dir, ops, rep, Meta{Lock: "setnx"}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMeasure_OneWindow: a cell's rate counts the acquisitions called at
// or after from (the clients' start plus the warm-up, not the history's
// zero: a lock's build comes before its clients), over from to the last
// client op's return (a nemesis op returning later does not stretch it),
// and a bare loop's Window fed the same ops gives the same rate.
func TestMeasure_OneWindow(t *testing.T) {
	const s = int64(time.Second)
	ops := []history.Op{
		// Built for 2 s; clients from 2 s; warm-up 1 s: from is 3 s.
		{Process: 0, F: history.Acquire, Type: history.OK, Key: "k", Token: "a", TTLms: 1000, Call: 2 * s, Return: 2*s + s/10},
		{Process: 0, F: history.Release, Type: history.OK, Key: "k", Token: "a", Call: 2*s + s/5, Return: 3*s + s/10},
		{Process: 1, F: history.Acquire, Type: history.OK, Key: "j", Token: "b", TTLms: 1000, Call: 3 * s, Return: 3*s + s/10},
		{Process: 1, F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 1000, Call: 3 * s, Return: 3*s + s/10},
		{Process: 0, F: history.Acquire, Type: history.OK, Key: "k", Token: "c", TTLms: 1000, Call: 4 * s, Return: 4*s + s/10},
		{Process: 0, F: history.Release, Type: history.OK, Key: "k", Token: "c", Call: 4*s + s/5, Return: 5 * s},
		{Process: -1, F: history.Nemesis, Type: history.Info, Call: 3 * s, Return: 9 * s, Value: &history.NemesisValue{Fault: "kill-redis", Phase: "stop"}},
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hw := history.NewWriter(f, 0)
	win := Window{From: 3 * time.Second}
	for _, op := range ops {
		if _, err := hw.Write(op); err != nil {
			t.Fatal(err)
		}
		if op.F != history.Nemesis {
			win.Op(time.Duration(op.Call), time.Duration(op.Return), op.F == history.Acquire && op.Type == history.OK)
		}
	}
	if err := errors.Join(hw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	var r BenchRow
	if err := r.Measure(path, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	// Two acquisitions (b and c) over 3 s to 5 s.
	if r.Acquisitions != 1 || win.Rate() != r.Acquisitions {
		t.Errorf("rate %.3f/s, the bare loop's window %.3f/s (acquired %d over %.1f s); want 1/s both", r.Acquisitions, win.Rate(), win.Acquired, win.Seconds())
	}
	half := Window{From: 3 * time.Second}
	half.Merge(Window{From: 3 * time.Second, Acquired: 2, End: 5 * time.Second})
	if half.Rate() != 1 || (Window{From: time.Second}).Rate() != 0 {
		t.Errorf("merged %.3f/s, empty %.3f/s; want 1 and 0", half.Rate(), Window{From: time.Second}.Rate())
	}
}
