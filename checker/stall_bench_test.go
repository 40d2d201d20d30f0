package checker

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// genStalls simulates a correct lease lock on keys keys of clients
// clients each, perKey ops a key, through Redis pauses of a second every
// `every`: an op that reaches Redis during a pause runs when it resumes,
// in arrival order, and a client that waited longer than its op timeout
// (500 ms) has given up, recording info. An acquire that so won holds
// the key as an orphan for its TTL; the clients that come next fail.
func genStalls(seed uint64, keys, clients, perKey int, every time.Duration) []history.Op {
	const ms = int64(time.Millisecond)
	r := rand.New(rand.NewPCG(seed, 7))
	ttl, timeout, pause := 200*ms, 500*ms, int64(time.Second)
	resume := func(t int64) int64 { // when an op reaching Redis at t runs: pauses end each period
		if p := int64(every); t%p >= p-pause {
			return t - t%p + p
		}
		return t
	}
	var ops []history.Op
	for k := 0; k < keys; k++ {
		key := "lock:" + strconv.Itoa(k)
		type client struct{ holding string }
		cs := make([]client, clients)
		q := &simQueue{}
		calls := map[int]int64{}
		for c := range cs {
			calls[c] = r.Int64N(10 * ms)
			heap.Push(q, simEvent{lin: calls[c] + 500_000, client: c})
		}
		var holder string
		var expiry int64
		tok, n := 0, 0
		for n < perKey {
			e := heap.Pop(q).(simEvent)
			if at := resume(e.lin); at != e.lin {
				heap.Push(q, simEvent{lin: at + r.Int64N(1000), client: e.client})
				continue
			}
			c, call := &cs[e.client], calls[e.client]
			ret := e.lin + 100_000 + r.Int64N(ms)
			op := history.Op{Process: k*clients + e.client, Key: key, Call: call, Return: ret}
			lost := ret-call > timeout
			if lost {
				op.Return = call + timeout
			}
			next := ret + r.Int64N(150*ms) // backoff after a failed acquire
			if c.holding == "" {
				tok++
				op.F, op.TTLms, op.Token = history.Acquire, ttl/ms, key+"/"+strconv.Itoa(tok)
				if holder == "" || e.lin >= expiry {
					holder, expiry = op.Token, e.lin+ttl
					op.Type, c.holding = history.OK, op.Token
					next = ret + ms + r.Int64N(ttl/4)
				} else {
					op.Type, op.Token = history.Fail, ""
				}
			} else {
				op.F, op.Token = history.Release, c.holding
				op.Type = history.Fail
				if holder == c.holding && e.lin < expiry {
					op.Type, holder = history.OK, ""
				}
				c.holding = ""
				next = ret + r.Int64N(ms)
			}
			if lost {
				if op.F == history.Acquire {
					op.Token = key + "/" + strconv.Itoa(tok)
				}
				op.Type, c.holding = history.Info, "" // it does not know
				next = op.Return + r.Int64N(150*ms)
			}
			ops = append(ops, op)
			n++
			calls[e.client] = next
			heap.Push(q, simEvent{lin: next + 100_000 + r.Int64N(ms), client: e.client})
		}
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

// orphanShare is the share of acquires that are orphan info acquires.
func orphanShare(ops []history.Op) float64 {
	named := map[string]int{}
	for _, op := range ops {
		named[op.Token]++
	}
	var acquires, orphans int
	for _, op := range ops {
		if op.F == history.Acquire {
			acquires++
			if op.Type == history.Info && named[op.Token] == 1 {
				orphans++
			}
		}
	}
	return float64(orphans) / float64(acquires)
}

// uncover moves one failed acquire of ops to an instant where no lease
// can hold its key (outside every token's hold window, after the first
// acquire): the history is then invalid.
func uncover(ops []history.Op) []history.Op {
	ops = slices.Clone(ops)
	var ptrs []*history.Op
	for i := range ops {
		if ops[i].Key == "lock:0" {
			ptrs = append(ptrs, &ops[i])
		}
	}
	m := leaseModel{eps: int64(DefaultClockTolerance)}
	ws := holdWindows(m, toLockOps(ptrs, int64(time.Second+500*time.Millisecond)))
	slices.SortFunc(ws, func(a, b holdWindow) int { return cmpInt(a.from, b.from) })
	reach := ws[0].to
	for _, w := range ws[1:] {
		if w.from > reach+2 { // a gap no window meets
			for _, p := range ptrs {
				if p.F == history.Acquire && p.Type == history.Fail {
					p.Call, p.Return = reach+1, w.from-1
					return ops
				}
			}
		}
		reach = max(reach, w.to)
	}
	panic("no gap to move a failed acquire into")
}

// TestGenStalls: the simulated stalls are valid, 5% of acquires or more
// are orphans, and uncover makes the history invalid.
func TestGenStalls(t *testing.T) {
	ops := genStalls(1, 2, 20, 3000, 2*time.Second)
	s := orphanShare(ops)
	t.Logf("%d ops, %.1f%% of acquires orphans", len(ops), 100*s)
	if s < 0.05 {
		t.Errorf("orphans are %.1f%% of acquires, want 5%%", 100*s)
	}
	opt := Options{InfoHorizon: time.Second + 500*time.Millisecond}.Resolved()
	if r := Linearizable(context.Background(), ops, opt); r.Verdict != Valid {
		t.Fatalf("simulated stalls: %s %+v", r.Verdict, r.Violations)
	}
	if r := Linearizable(context.Background(), uncover(ops), opt); r.Verdict != Invalid {
		t.Fatalf("a failed acquire moved out of every hold window: %s", r.Verdict)
	}
}

// BenchmarkLinearizable_100k_Stalls: 10 keys, 100k ops, Redis paused a
// second every 2 s; about 5% of acquires are orphans bunched in the
// pauses. The target: valid in under 5 s.
func BenchmarkLinearizable_100k_Stalls(b *testing.B) {
	ops := genStalls(1, 10, 20, 10_000, 2*time.Second)
	b.Logf("%d ops, %.1f%% of acquires orphans", len(ops), 100*orphanShare(ops))
	benchCheck(b, ops, lin(Options{InfoHorizon: 1500 * time.Millisecond}))
}

// BenchmarkLinearizable_100k_Stalls_Invalid is its invalid mutation: one
// failed acquire moved where no lease can cover it; invalid in under 5 s.
func BenchmarkLinearizable_100k_Stalls_Invalid(b *testing.B) {
	ops := uncover(genStalls(1, 10, 20, 10_000, 2*time.Second))
	benchCheckWant(b, ops, Invalid, lin(Options{InfoHorizon: 1500 * time.Millisecond}))
}

// BenchmarkLinearizable_100k_Stalls_NoCover is the baseline: the same
// history without the cover witness (5b), within a minute and 2 GB.
func BenchmarkLinearizable_100k_Stalls_NoCover(b *testing.B) {
	ops := genStalls(1, 10, 20, 10_000, 2*time.Second)
	benchCheckWant(b, ops, Unknown, lin(Options{InfoHorizon: 1500 * time.Millisecond, skip: skipCover, Timeout: time.Minute, Memory: 2 << 30}))
}
