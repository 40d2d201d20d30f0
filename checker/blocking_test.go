package checker

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// blockingOverrun is verify's overrun at --wait 2s through redis-py's
// blocking acquire (examples/adapters/redispy/lock.py, 200 clients on 5
// keys, 1,532 lock ops), whose granted waits say when their winning try
// was sent (tried): the run the battery left unknown, one key of 303 lock
// ops out of the check's memory, before effectFrom.
const blockingOverrun = "blocking-overrun-redispy.jsonl.gz"

var blockingOverrunOptions = Options{ClockTolerance: Exactly(50 * time.Millisecond), InfoHorizon: Exactly(1500 * time.Millisecond), Timeout: 2 * time.Minute}

// TestEffectFrom_TriedNarrows: an ok blocking acquire that says when its
// winning try was sent took effect no earlier than that try (its clock
// bound allowed for); a refused one, or one that says nothing, from its
// call.
func TestEffectFrom_TriedNarrows(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	granted := history.Op{F: history.Acquire, Type: history.OK, Token: "w", WaitMs: 2000, WakeMs: 200, Call: ms(10), Tried: ms(900), Return: ms(901)}
	silent := granted
	silent.Tried = 0
	refused := history.Op{F: history.Acquire, Type: history.Fail, WaitMs: 2000, WakeMs: 200, Call: ms(10), Return: ms(2010)}
	bounded := granted
	bounded.ClockBound = ms(5)
	for _, c := range []struct {
		name string
		op   history.Op
		want int64
	}{{"granted, tried", granted, ms(900)}, {"granted, silent", silent, ms(10)}, {"refused", refused, ms(10)}, {"granted, another clock", bounded, ms(895)}} {
		if got := toLockOps([]*history.Op{&c.op}, 0)[0].call; got != c.want {
			t.Errorf("%s: the mutex model's call %d, want %d", c.name, got, c.want)
		}
		if got := toPermitOps([]*history.Op{&c.op}, 0, false)[0].call; got != c.want {
			t.Errorf("%s: the shapes' model's call %d, want %d", c.name, got, c.want)
		}
	}
}

// TestLinearizable_BlockingOverrunDecided: that run's every key decided,
// valid, its granted waits narrowed to their last try.
func TestLinearizable_BlockingOverrunDecided(t *testing.T) {
	ops := pauseRedisHistory(t, blockingOverrun)
	res := Linearizable(context.Background(), ops, blockingOverrunOptions.Resolved())
	if res.Verdict != Valid || len(res.UnknownKeys) != 0 {
		t.Fatalf("verdict %s, unknown keys %v (%s): want every key decided, valid", res.Verdict, res.UnknownKeys, res.Note)
	}
}

// BenchmarkLinearizable_BlockingOverrun checks that run as the checker
// does, and with its granted waits' tries dropped (each from its call, as
// before effectFrom), side by side; each reports its undecided keys, the
// second under a 30 s limit.
func BenchmarkLinearizable_BlockingOverrun(b *testing.B) {
	ops := pauseRedisHistory(b, blockingOverrun)
	silent := append([]history.Op(nil), ops...)
	for i := range silent {
		silent[i].Tried = 0
	}
	o := blockingOverrunOptions
	o.Timeout = 30 * time.Second
	for _, bc := range []struct {
		name string
		ops  []history.Op
	}{{"tried", ops}, {"from-call", silent}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res := Linearizable(context.Background(), bc.ops, o.Resolved())
				b.ReportMetric(float64(len(res.UnknownKeys)), "unknown_keys")
			}
		})
	}
}
