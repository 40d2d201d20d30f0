package checker

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// genSemaphoreKey simulates a correct semaphore of k permits on one key:
// clients loop acquire -> hold -> release, or back off after a refusal;
// each op's outcome is decided at its linearization point, in that order,
// so the history is linearizable by construction. One reply in lost is
// lost (an info op, taken effect: an acquire's lease then runs to its
// TTL, its client none the wiser); none if lost is 0.
func genSemaphoreKey(seed uint64, clients, k, n int, ttl int64, lost int) []history.Op {
	const ms = int64(time.Millisecond)
	r := rand.New(rand.NewPCG(seed, 97))
	latency := func() int64 { return 100_000 + r.Int64N(2*ms) }
	holding := make([]string, clients)
	q := &simQueue{}
	for c := range clients {
		heap.Push(q, simEvent{lin: r.Int64N(10 * ms), client: c})
	}
	expiry := map[string]int64{} // the leases held, and when each ends
	var ops []history.Op
	for tok := 0; len(ops) < n; {
		e := heap.Pop(q).(simEvent)
		lat := latency()
		op := history.Op{Index: int64(len(ops)), Process: e.client, Key: "hot", Call: e.lin - lat/2, Return: e.lin + lat/2, Type: history.OK}
		for t, x := range expiry {
			if e.lin >= x {
				delete(expiry, t)
			}
		}
		next := op.Return + r.Int64N(20*ms) // back off after a refusal
		if h := holding[e.client]; h == "" {
			tok++
			op.F, op.TTLms, op.Permits, op.Token = history.Acquire, ttl/ms, k, "s"+strconv.Itoa(tok)
			if len(expiry) < k {
				expiry[op.Token], holding[e.client] = e.lin+ttl, op.Token
				next = op.Return + ms + r.Int64N(ttl/5) // hold, within the TTL
			} else {
				op.Type = history.Fail
			}
		} else {
			op.F, op.Token, holding[e.client] = history.Release, h, ""
			if _, held := expiry[h]; !held {
				op.Type = history.Fail
			}
			delete(expiry, h)
			next = op.Return + r.Int64N(ms)
		}
		if lost > 0 && r.IntN(lost) == 0 && op.Type == history.OK {
			op.Type, holding[e.client] = history.Info, ""
		}
		ops = append(ops, op)
		heap.Push(q, simEvent{lin: next + lat/2, client: e.client})
	}
	renumber(&oracleHistory{ops: ops})
	return ops
}

// BenchmarkSemaphore_HotKey decides one hot key of 100,000 ops of a
// semaphore of 5 permits (8 clients, so that all 5 are often held and
// acquires refused, and never all free for long), as checkPermits does
// (pieces carried where nothing is in flight), and with porcupine alone
// on the whole key. "lost" has one reply in 1000 lost, each in flight up
// to the default info horizon (10 s), which the pieces carry. Each is
// decided on the key's ops as they are ("whole"), as verify did before
// nestedRefusals ("held-through": refusals dropped only where k leases
// were surely held through all their interval) and as verify does now
// (surelyRefused: "reduced"), side by side in one run.
func BenchmarkSemaphore_HotKey(b *testing.B) {
	for _, bc := range []struct {
		name      string
		lost      int
		porcupine bool
	}{{"definite", 0, false}, {"lost", 1000, false}, {"porcupine-alone", 0, true}} {
		for _, reduce := range []string{"whole", "held-through", "reduced"} {
			if bc.porcupine && reduce != "whole" {
				continue
			}
			b.Run(bc.name+"/"+reduce, func(b *testing.B) {
				ops := genSemaphoreKey(1, 8, 5, 100_000, int64(100*time.Millisecond), bc.lost)
				benchSemaphore(b, ops, bc.porcupine, reduce)
			})
		}
	}
}

// refusedThrough is surelyRefused as it was before nestedRefusals: a
// refusal dropped only where k leases were surely held through all of
// its interval.
func refusedThrough(ops []*permitOp, k int, eps int64) []*permitOp {
	spans := surelyHeldSpans(ops, eps)
	return slices.DeleteFunc(slices.Clone(ops), func(o *permitOp) bool {
		return o.f == history.Acquire && o.typ == history.Fail && heldThrough(spans, o) >= k
	})
}

func benchSemaphore(b *testing.B, ops []history.Op, alone bool, reduce string) {
	ptrs := make([]*history.Op, len(ops))
	fails := 0
	for i := range ops {
		ptrs[i] = &ops[i]
		fails += btoi(ops[i].F == history.Acquire && ops[i].Type == history.Fail)
	}
	opt := Options{}.Resolved()
	k := Permits(ptrs)
	pops := toPermitOps(ptrs, int64(opt.InfoHorizon), false)
	m := newPermitModel(semaphore{k}, int64(opt.ClockTolerance))
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		judged := pops
		switch reduce {
		case "held-through":
			judged = refusedThrough(pops, k, m.eps)
		case "reduced":
			judged, _ = surelyRefused(pops, k, m.eps)
		}
		r := checkPermits(ctx, m, judged)
		if alone {
			r = porcupine.CheckOperationsTimeout(m.porcupine(), toPorcupinePermits(judged), 5*time.Minute)
		}
		cancel()
		if r != porcupine.Ok {
			b.Fatalf("a correct semaphore's hot key: %v, want ok", r)
		}
		b.ReportMetric(float64(len(pops)-len(judged)), "dropped")
	}
	pieces, _ := infoPieces(pops)
	b.ReportMetric(float64(len(pieces)), "pieces")
	b.ReportMetric(float64(fails), "refusals")
}
