package report

import (
	"math/rand/v2"
	"strconv"
	"testing"

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
