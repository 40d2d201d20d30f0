package checker

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// refusedShape is genRefused's shape: the held-out slow-op history of
// issue 66 (one key, 60 clients, TTL 10 ms, ops lasting up to 100 ms,
// 497 ops of which 401 refused acquires and 40 indeterminate acquires,
// at tolerance 0 and a 100 ms horizon), in numbers.
type refusedShape struct {
	clients int
	leases  int           // leases granted, one after another
	ttl     time.Duration // every acquire's TTL
	spread  time.Duration // how far an op's interval reaches either side of its instant
	horizon time.Duration // the info horizon it is judged at
	refused int           // refused acquires a lease, about
	infos   int           // indeterminate acquires in all, about
	granted int           // of every 4 indeterminate acquires, how many took effect (leases)
	quick   int           // of every 4 ops, how many are quick (reaching at most a TTL/10 either side)
}

// issue66Shape is the shape of the issue's history: 35 leases of 10 ms,
// about 400 refusals and 40 indeterminate acquires among them, a
// quarter of those grants (orphans: their clients gave up, and nothing
// releases them), half the ops quick (a tenth of a TTL either side) and
// the others reaching up to 50 ms either side (ops lasting up to 100
// ms, ten TTLs). Of its variants, this is the one the checker found
// hardest: its quick refusals pin the leases down, and the orphans are
// the only holders some of them can have.
var issue66Shape = refusedShape{clients: 60, leases: 35, ttl: 10 * time.Millisecond, spread: 50 * time.Millisecond,
	horizon: 100 * time.Millisecond, refused: 11, infos: 40, granted: 1, quick: 2}

// genRefused is one key of a correct lease lock with few grants and many
// refused acquires around them, as 60 clients retrying one hot key make
// under a short TTL on a slow machine: each lease is an ok acquire or an
// indeterminate one that took effect (its client gave up at most the
// horizon before that), released in time (ok), or left to expire and
// released late (failed, "not held"); the key is refused to every
// acquire taking effect while a lease lives, among them indeterminate
// ones that took no effect (their reply lost); the next lease is granted
// soon after the key comes free. Each op's interval reaches up to spread
// either side of the instant it took effect. Valid by construction:
// genRefusedAt gives the instants, a timeline.
func genRefused(seed uint64, sh refusedShape) []history.Op {
	ops, _ := genRefusedAt(seed, sh)
	return ops
}

// genRefusedAt is genRefused with the instant each op took effect at (by
// index).
func genRefusedAt(seed uint64, sh refusedShape) ([]history.Op, []int64) {
	r := rand.New(rand.NewPCG(seed, 66))
	ttl, spread, horizon := int64(sh.ttl), int64(sh.spread), int64(sh.horizon)
	// Of the indeterminate acquires, granted in four took effect (a
	// grant whose reply was lost); the others were refused.
	grants := sh.infos * sh.granted / 4
	grantInfoEvery := max(sh.leases/max(grants, 1), 1)
	refusalInfoEvery := max((sh.leases*sh.refused)/max(sh.infos-grants, 1), 1)
	var ops []history.Op
	var at []int64
	add := func(op history.Op, instant int64) {
		reach := spread
		if r.IntN(4) < sh.quick {
			reach = ttl / 10
		}
		op.Process, op.Key, op.Call = r.IntN(sh.clients), "k", max(instant-r.Int64N(reach), 0)
		op.Return = instant + r.Int64N(reach)
		if op.Type == history.Info {
			// Given up before its recorded return: for a grant, at most
			// the horizon before it took effect.
			op.Return, op.Error = max(op.Call, instant-r.Int64N(horizon)), "timeout"
		}
		ops, at = append(ops, op), append(at, instant)
	}
	t := int64(time.Second)
	for i := range sh.leases {
		tok := "t" + strconv.Itoa(i)
		end := t + ttl
		if r.IntN(grantInfoEvery) == 0 {
			add(history.Op{F: history.Acquire, Type: history.Info, Token: tok, TTLms: sh.ttl.Milliseconds()}, t)
		} else {
			add(history.Op{F: history.Acquire, Type: history.OK, Token: tok, TTLms: sh.ttl.Milliseconds()}, t)
			if hold := r.Int64N(2 * ttl); hold < ttl-ttl/5 {
				end = t + hold
				add(history.Op{F: history.Release, Type: history.OK, Token: tok}, end)
			} else {
				add(history.Op{F: history.Release, Type: history.Fail, Token: tok, Error: "not held"}, end+1+r.Int64N(ttl))
			}
		}
		// Refusals strictly inside the lease's life.
		for range sh.refused/2 + r.IntN(sh.refused+1) {
			f := t + 1 + r.Int64N(end-t-1)
			typ := history.Fail
			if r.IntN(refusalInfoEvery) == 0 {
				typ = history.Info
			}
			add(history.Op{F: history.Acquire, Type: typ, TTLms: sh.ttl.Milliseconds(), Error: "taken"}, f)
		}
		t = end + 1 + r.Int64N(ttl/5)
	}
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	sorted, inst := make([]history.Op, len(ops)), make([]int64, len(ops))
	for i, j := range idx {
		sorted[i], inst[i] = ops[j], at[j]
		sorted[i].Index = int64(i)
	}
	return sorted, inst
}
