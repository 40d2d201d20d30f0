package checker

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// genHistory simulates a correct lease lock: per key, `clients` clients
// loop acquire -> hold -> release (or retry after a failed acquire). Each
// op's outcome is decided at its linearization point, in linearization
// order, so the history is linearizable by construction. Ops of all keys
// are merged in completion order, as the Writer records them.
func genHistory(seed uint64, keys, clients, opsPerKey int, ttl time.Duration) []history.Op {
	r := rand.New(rand.NewPCG(seed, 1))
	var ops []history.Op
	for k := 0; k < keys; k++ {
		ops = append(ops, genKey(r, "lock:"+strconv.Itoa(k), k*clients, clients, opsPerKey, int64(ttl))...)
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

type simEvent struct {
	lin    int64 // linearization point
	client int
}

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].lin < q[j].lin }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func genKey(r *rand.Rand, key string, firstProc, clients, n int, ttl int64) []history.Op {
	const ms = int64(time.Millisecond)
	latency := func() int64 { return 100_000 + r.Int64N(2*ms) } // 0.1..2.1ms
	type client struct {
		holding string
		lat     int64
	}
	cs := make([]client, clients)
	q := &simQueue{}
	for c := range cs {
		cs[c].lat = latency()
		heap.Push(q, simEvent{lin: r.Int64N(10*ms) + cs[c].lat/2, client: c})
	}
	var holder string
	var expiry int64
	var ops []history.Op
	tok := 0
	for len(ops) < n {
		e := heap.Pop(q).(simEvent)
		c := &cs[e.client]
		call, ret := e.lin-c.lat/2, e.lin+c.lat/2
		op := history.Op{Process: firstProc + e.client, Key: key, Call: call, Return: ret}
		next := ret + r.Int64N(20*ms) // backoff after a failed acquire
		if c.holding == "" {
			op.F, op.TTLms = history.Acquire, ttl/ms
			if holder == "" || e.lin >= expiry {
				tok++
				holder, expiry = key+"/"+strconv.Itoa(tok), e.lin+ttl
				op.Type, op.Token, c.holding = history.OK, holder, holder
				next = ret + ms + r.Int64N(ttl/5) // hold, within the TTL
			} else {
				op.Type = history.Fail
			}
		} else {
			op.F, op.Token = history.Release, c.holding
			if holder == c.holding && e.lin < expiry {
				op.Type, holder = history.OK, ""
			} else {
				op.Type = history.Fail
			}
			c.holding = ""
			next = ret + r.Int64N(ms) // think
		}
		ops = append(ops, op)
		c.lat = latency()
		heap.Push(q, simEvent{lin: next + c.lat/2, client: e.client})
	}
	return ops
}
