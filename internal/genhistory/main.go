// Command genhistory writes a large history of a correct lease lock, for
// measuring `lockcheck check` on histories longer than a run here makes:
//
//	go run ./internal/genhistory -ops 100000000 -out /tmp/big/history.jsonl
//	/usr/bin/time -v lockcheck check /tmp/big/history.jsonl
//
// Per key, clients loop acquire, write (the critical section), release,
// with a failed acquire retried; each op's outcome is decided at its
// linearization point, in linearization order over all keys, so the
// history is valid by construction. A pause-redis window opens every 5 s
// (the coverage figures have faults to hit). It streams: what it holds is
// the clients, not the history. With -steal N, every Nth refused acquire
// is recorded as granted, so the history must be judged invalid.
package main

import (
	"bufio"
	"container/heap"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

const ms = int64(time.Millisecond)

type event struct {
	lin    int64 // linearization point of the client's next op
	client int
}

type events []event

func (q events) Len() int           { return len(q) }
func (q events) Less(i, j int) bool { return q[i].lin < q[j].lin }
func (q events) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)        { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// byReturn holds ops made but not yet written: the history is in
// completion order.
type byReturn []history.Op

func (q byReturn) Len() int           { return len(q) }
func (q byReturn) Less(i, j int) bool { return q[i].Return < q[j].Return }
func (q byReturn) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *byReturn) Push(x any)        { *q = append(*q, x.(history.Op)) }
func (q *byReturn) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type client struct {
	key     int
	holding string
}

type lockState struct {
	holder string
	expiry int64
}

func main() {
	n := flag.Int64("ops", 1_000_000, "ops to write")
	keys := flag.Int("keys", 10_000, "lock keys")
	perKey := flag.Int("clients-per-key", 3, "clients contending for each key")
	ttl := flag.Duration("ttl", time.Second, "lease TTL")
	steal := flag.Int64("steal", 0, "record every Nth refused acquire as granted (0: never): an invalid history")
	out := flag.String("out", "history.jsonl", "where to write the history")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *n < 1 || *keys < 1 || *perKey < 1 || *ttl < 10*time.Millisecond {
		fmt.Fprintln(os.Stderr, "genhistory: want -ops, -keys and -clients-per-key of at least 1 and -ttl of at least 10ms")
		os.Exit(2)
	}
	if err := generate(*n, *keys, *perKey, int64(*ttl), *steal, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genhistory:", err)
		os.Exit(1)
	}
}

func generate(n int64, keys, perKey int, ttl, steal int64, seed uint64, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := history.NewWriter(bw, time.Hour)
	g := &gen{r: rand.New(rand.NewPCG(seed, 1)), ttl: ttl, steal: steal, cs: make([]client, keys*perKey),
		locks: make([]lockState, keys), q: &events{}, pending: &byReturn{}, nextFault: 5 * int64(time.Second)}
	for c := range g.cs {
		g.cs[c].key = c / perKey
		heap.Push(g.q, event{lin: 2*ms + g.r.Int64N(10*ms), client: c})
	}
	var written int64
	emit := func(upTo int64) error {
		for g.pending.Len() > 0 && (*g.pending)[0].Return < upTo {
			if _, err := w.Write(heap.Pop(g.pending).(history.Op)); err != nil {
				return err
			}
			written++
		}
		return nil
	}
	for written < n {
		e := heap.Pop(g.q).(event)
		// Every op still to come returns after e.lin less half a latency.
		if err := emit(e.lin - 2*ms); err != nil {
			return err
		}
		g.faults(e.lin)
		g.step(e)
	}
	if err := emit(1 << 62); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// gen is the simulation: clients taking turns on their keys' locks.
type gen struct {
	r               *rand.Rand
	ttl, steal      int64
	cs              []client
	locks           []lockState
	q               *events
	pending         *byReturn
	tokens, refused int64
	nextFault       int64
}

func (g *gen) latency() int64 { return 100_000 + g.r.Int64N(2*ms) } // 0.1..2.1 ms

// faults schedules a pause-redis window every 5 s up to lin.
func (g *gen) faults(lin int64) {
	if lin <= g.nextFault {
		return
	}
	for _, ph := range []struct {
		phase string
		at    int64
	}{{"start", g.nextFault}, {"stop", g.nextFault + 500*ms}} {
		heap.Push(g.pending, history.Op{Process: history.NemesisProcess, F: history.Nemesis, Type: history.Info,
			Call: ph.at, Return: ph.at + ms, Value: &history.NemesisValue{Fault: "pause-redis", Phase: ph.phase, Targets: []string{"n1"}}})
	}
	g.nextFault += 5 * int64(time.Second)
}

// step plays event e: its client's acquire (and critical section) or
// release, and schedules its next turn.
func (g *gen) step(e event) {
	c, l := &g.cs[e.client], &g.locks[g.cs[e.client].key]
	lat := g.latency()
	call, ret := e.lin-lat/2, e.lin+lat/2
	op := history.Op{Process: e.client, Key: "lock:" + strconv.Itoa(c.key), Call: call, Return: ret}
	next := ret + g.r.Int64N(20*ms) // backoff after a refused acquire
	if c.holding == "" {
		op.F, op.TTLms = history.Acquire, g.ttl/ms
		free := l.holder == "" || e.lin >= l.expiry
		if !free {
			g.refused++
		}
		if free || g.steal > 0 && g.refused%g.steal == 0 {
			g.tokens++
			tok := strconv.FormatUint(rand.Uint64(), 16) + strconv.FormatInt(g.tokens, 36)
			if free {
				l.holder, l.expiry = tok, e.lin+g.ttl
			}
			op.Type, op.Token, c.holding = history.OK, tok, tok
			// The critical section, well within the TTL, then the release.
			hold := ms + g.r.Int64N(5*ms)
			wr := history.Op{Process: e.client, F: history.Write, Type: history.OK, Key: op.Key, Token: tok, Call: ret + 10_000, Return: ret + 10_000 + hold}
			heap.Push(g.pending, wr)
			next = wr.Return + 10_000
		} else {
			op.Type = history.Fail
		}
	} else {
		op.F, op.Token = history.Release, c.holding
		if l.holder == c.holding && e.lin < l.expiry {
			op.Type, l.holder = history.OK, ""
		} else {
			op.Type = history.Fail
		}
		c.holding = ""
		next = ret + g.r.Int64N(ms) // think
	}
	heap.Push(g.pending, op)
	heap.Push(g.q, event{lin: next + g.latency()/2, client: e.client})
}
