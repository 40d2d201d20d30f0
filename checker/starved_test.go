package checker

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The starved-waiter check against a brute-force oracle on small random
// histories of one key (unit: 1 ms). The oracle enumerates, on a grid of
// half a unit, every timeline of each lease on its own, as the lease
// model has it: the grant at an instant of its acquire's interval (an
// info one, or never), each extend at an instant of its own after the
// grant while the lease was held (an info one, or never), the true end X
// in [E - eps, E + eps] of its last setter, the release at an instant
// between the grant and X (an info one, or never); the lease is held
// from its grant to the earliest of X and its release. An instant is
// free for a waiter when fewer than k leases of other tokens are held
// there in some timeline of each, and a waiter's longest free span in
// its window is read off the grid. The check (possiblyHeld's spans) is
// never finer than that: its longest span is never longer than the
// oracle's, so it flags no waiter the oracle does not; and on a legal
// history where no lease has an extend, the two agree exactly (the check
// is coarser only where it bounds a replaced TTL by the latest of every
// setter's, and where an op has no timeline at all, which linearizable
// flags).

const unit = int64(time.Millisecond)

// starvedCase is one random history, with its k, eps and horizon.
type starvedCase struct {
	ops          []history.Op
	k            int
	eps, horizon int64
	extends      bool
}

func genStarved(r *rand.Rand) starvedCase {
	c := starvedCase{k: 1 + r.IntN(2), eps: unit * r.Int64N(2), horizon: 3 * unit}
	var ops []history.Op
	u := func(n int64) int64 { return unit * r.Int64N(n) }
	permits := 0
	if c.k > 1 {
		permits = c.k
	}
	types := []history.Type{history.OK, history.OK, history.OK, history.Info, history.Fail}
	bound := func() int64 {
		if r.IntN(4) == 0 {
			return unit
		}
		return 0
	}
	for tok := range 1 + r.IntN(4) {
		token := "t" + string(rune('a'+tok))
		call := u(30)
		ret := call + u(4)
		typ := types[r.IntN(len(types))]
		a := history.Op{F: history.Acquire, Type: typ, Key: "k", Token: token, TTLms: 2 + r.Int64N(14), Permits: permits, Call: call, Return: ret, ClockBound: bound()}
		if typ == history.Fail {
			a.Token = ""
		}
		ops = append(ops, a)
		last := ret
		if typ != history.Fail && r.IntN(3) == 0 {
			c.extends = true
			ec := last + u(6)
			e := history.Op{F: history.Extend, Type: types[r.IntN(len(types))], Key: "k", Token: token, TTLms: 2 + r.Int64N(10), Call: ec, Return: ec + u(3)}
			if r.IntN(3) == 0 {
				e.Mode = history.ExtendAdd
			}
			ops = append(ops, e)
			last = e.Return
		}
		if typ != history.Fail && r.IntN(2) == 0 {
			rc := last + u(9)
			ops = append(ops, history.Op{F: history.Release, Type: types[r.IntN(len(types))], Key: "k", Token: token, Call: rc, Return: rc + u(3), ClockBound: bound()})
		}
	}
	wake := 1 + r.Int64N(6)
	for w := range 1 + r.IntN(2) {
		call := u(20)
		wait := 3 + r.Int64N(18)
		op := history.Op{F: history.Acquire, Key: "k", TTLms: 2 + r.Int64N(10), Permits: permits, WaitMs: wait, WakeMs: wake, Call: call, ClockBound: bound()}
		switch r.IntN(3) {
		case 0:
			op.Type, op.Token = history.OK, "w"+string(rune('a'+w))
			op.Return = call + u(wait+3)
			op.Tried = call + unit*r.Int64N((op.Return-call)/unit+1)
		case 1:
			op.Type = history.Fail
			op.Return = call + wait*unit + u(3)
		default:
			op.Type, op.Token = history.Info, "w"+string(rune('a'+w))
			op.Return = call + u(wait+3)
		}
		ops = append(ops, op)
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	c.ops = ops
	return c
}

// half is the oracle's grid step.
const half = unit / 2

// oracleHeld marks, for each lease of ops (by token), the grid instants
// it is held at in some timeline of its own.
func oracleHeld(ops []history.Op, eps, horizon int64) (held map[string]map[int64]bool, legal bool) {
	type lease struct {
		acq, ext, rel *history.Op
	}
	leases := map[string]*lease{}
	for i := range ops {
		op := &ops[i]
		if op.Token == "" || op.Type == history.Fail {
			continue
		}
		l := leases[op.Token]
		if l == nil {
			l = &lease{}
			leases[op.Token] = l
		}
		switch op.F {
		case history.Acquire:
			l.acq = op
		case history.Extend:
			l.ext = op
		case history.Release:
			l.rel = op
		}
	}
	// instants are the grid points op may take effect at, and -1 for
	// never where an info op may not have.
	instants := func(op *history.Op) []int64 {
		var out []int64
		for t := max(0, op.Call-op.ClockBound); t <= op.Latest(horizon)+op.ClockBound; t += half {
			out = append(out, t)
		}
		if op.Type == history.Info {
			out = append(out, -1)
		}
		return out
	}
	held, legal = map[string]map[int64]bool{}, true
	for tok, l := range leases {
		if l.acq == nil {
			continue
		}
		maxEnd := map[int64]int64{} // by grant instant, the latest instant held
		for _, g := range instants(l.acq) {
			if g < 0 {
				continue
			}
			e0 := g + int64(l.acq.TTL())
			exts := []int64{-1}
			if l.ext != nil {
				exts = instants(l.ext)
			}
			for _, e := range exts {
				E := e0
				if e >= 0 {
					if e < g || e > e0+eps { // an extend takes effect only while held
						continue
					}
					if l.ext.Mode == history.ExtendAdd {
						E = e0 + int64(l.ext.TTL())
					} else {
						E = e + int64(l.ext.TTL())
					}
				}
				for X := E - eps; X <= E+eps; X += half {
					rels := []int64{-1}
					if l.rel != nil {
						rels = instants(l.rel)
					}
					for _, rl := range rels {
						end := X
						if rl >= 0 {
							if rl < g || rl > X { // a release takes effect only while held
								continue
							}
							end = rl
						}
						if m, ok := maxEnd[g]; !ok || end > m {
							maxEnd[g] = end
						}
					}
				}
			}
		}
		// An ok op with no timeline: the history is illegal (linearizable
		// says so), and the check may be coarser than the oracle on it.
		legal = legal && (len(maxEnd) > 0 || l.acq.Type != history.OK) && (l.ext == nil || l.ext.Type != history.OK || l.acq.Type != history.OK || len(maxEnd) > 0)
		h := map[int64]bool{}
		for g, end := range maxEnd {
			for t := g; t <= end; t += half {
				h[t] = true
			}
		}
		held[tok] = h
	}
	return held, legal
}

// oracleLongest is the oracle's longest free span in op's window.
func oracleLongest(held map[string]map[int64]bool, op *history.Op, k int) int64 {
	ws, we, ok := waitWindow(op)
	if !ok {
		return 0
	}
	free := func(t int64) bool {
		n := 0
		for tok, h := range held {
			if tok != op.Token && h[t] {
				n++
			}
		}
		return n < k
	}
	var best int64
	for a := ws; a <= we; a += half {
		if !free(a) {
			continue
		}
		b := a
		for b+half <= we && free(b+half) {
			b += half
		}
		lo, hi := a, b
		if a > ws {
			lo = a - half // the busy point before bounds the span
		}
		if b < we {
			hi = b + half
		}
		best = max(best, hi-lo)
		a = b
	}
	return best
}

func TestStarvedWaiters_AgreesWithOracle(t *testing.T) {
	n := 10000
	if raceEnabled {
		n = 1000
	}
	r := rand.New(rand.NewPCG(64, 2))
	var flagged, passed, coarser int
	for i := range n {
		c := genStarved(r)
		kops := make([]*history.Op, len(c.ops))
		for j := range c.ops {
			kops[j] = &c.ops[j]
		}
		spans := possiblyHeld(kops, c.horizon, c.eps)
		held, legal := oracleHeld(c.ops, c.eps, c.horizon)
		for _, op := range kops {
			ws, we, ok := waitWindow(op)
			if !ok {
				continue
			}
			sp := longestFree(spans, nil, op.Token, c.k, ws, we)
			got, want := sp.to-sp.from, oracleLongest(held, op, c.k)
			bound := op.WakeMs * unit
			switch {
			case got > want:
				t.Fatalf("history %d, waiter #%d: the check's longest free span %v is longer than the oracle's %v (it would flag what some timeline explains)\n%s", i, op.Index, time.Duration(got), time.Duration(want), dumpOps(c.ops))
			case got < want && !c.extends && legal:
				t.Fatalf("history %d, waiter #%d: the check's longest free span %v, the oracle's %v, on a legal history without extends (they must agree)\n%s", i, op.Index, time.Duration(got), time.Duration(want), dumpOps(c.ops))
			case got < want:
				coarser++
			}
			if got > bound {
				flagged++
			} else {
				passed++
			}
		}
	}
	t.Logf("%d histories: %d waiters flagged, %d passed, %d where the check was coarser than the oracle (extends, or an illegal history)", n, flagged, passed, coarser)
	if flagged == 0 || passed == 0 {
		t.Errorf("flagged %d, passed %d: want both, or the histories prove nothing", flagged, passed)
	}
}

func dumpOps(ops []history.Op) string {
	var b strings.Builder
	for _, op := range ops {
		b.Write(history.AppendBody([]byte(`{"index":`+strconv.FormatInt(op.Index, 10)), &op))
	}
	return b.String()
}

// TestLiveness_StarvedWaiter: a waiter refused after its wait while the
// key was free for longer than its bound is a liveness violation naming
// it, the span and the bound; the same waiter on a key held all through
// its wait, or freed within its bound before it took the key, is not;
// nor one whose free span lay mostly in a fault's window (Redis paused:
// no lock takes a key then), but one whose lay in drop-unlock's is;
// free_while_waiting counts the waiters whose key was free at all.
func TestLiveness_StarvedWaiter(t *testing.T) {
	ms := func(n int64) int64 { return n * unit }
	holder := history.Op{Process: 1, F: history.Acquire, Type: history.OK, Key: "k", Token: "h", TTLms: 10000, Call: ms(0), Return: ms(1)}
	release := history.Op{Process: 1, F: history.Release, Type: history.OK, Key: "k", Token: "h", Call: ms(100), Return: ms(101)}
	refused := history.Op{Process: 2, F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 1000, WaitMs: 2000, WakeMs: 250, Call: ms(10), Return: ms(2011)}
	tookLate := history.Op{Process: 2, F: history.Acquire, Type: history.OK, Key: "k", Token: "w", TTLms: 1000, WaitMs: 2000, WakeMs: 250, Call: ms(10), Tried: ms(1010), Return: ms(1011)}
	tookSoon := tookLate
	tookSoon.Tried, tookSoon.Return = ms(300), ms(301)
	heldThrough := release
	heldThrough.Call, heldThrough.Return = ms(2100), ms(2101)
	// A fault window over the waiter's sleep: Redis paused 0.2-0.9 s, or
	// its unlock messages dropped.
	paused := []history.Op{holder, faultAt("pause-redis", "start", ms(200)), tookLate, faultAt("pause-redis", "stop", ms(900)), release}
	dropped := []history.Op{holder, faultAt("drop-unlock", "start", ms(200)), tookLate, faultAt("drop-unlock", "stop", ms(900)), release}
	opt := Options{}.Resolved()
	for _, tt := range []struct {
		name    string
		ops     []history.Op
		starved int64
		chances int64 // free_while_waiting
		want    string
	}{
		{"refused on a free key", []history.Op{holder, refused, release}, 1, 1, "starved waiter on k: p2's blocking acquire (wait 2s, called 0.010s, gave up at 2.011s) slept 1.909s while the key certainly had a free permit (no lease possibly held from 0.101s to 2.010s), past its lock's wake-up bound of 250ms"},
		{"took the key a second after it was free", []history.Op{holder, tookLate, release}, 1, 1, "slept 909ms"},
		{"took the key within its bound", []history.Op{holder, tookSoon, release}, 0, 1, ""},
		{"refused on a key held all through", []history.Op{holder, refused, heldThrough}, 0, 0, ""},
		// Redis paused over most of the free span: what is left, 0.101-
		// 0.2 s and 0.9-1.01 s, is within the bound.
		{"took the key late, Redis paused meanwhile", paused, 0, 1, ""},
		// drop-unlock is the lock's own chance to starve: judged through.
		{"took the key late, its unlock messages dropped", dropped, 1, 1, "slept 909ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ops := append([]history.Op(nil), tt.ops...)
			for i := range ops {
				ops[i].Index = int64(i)
			}
			res := Liveness(ops, opt)
			if got := res.Figures["starved_waiters"]; got != tt.starved {
				t.Fatalf("starved_waiters: got %d, want %d (%v)", got, tt.starved, res.Violations)
			}
			if f := res.Figures; f["free_while_waiting"] != tt.chances || f["blocking_acquires"] != 1 {
				t.Errorf("free_while_waiting %d, blocking_acquires %d: want %d and 1", f["free_while_waiting"], f["blocking_acquires"], tt.chances)
			}
			if tt.starved == 0 && res.Verdict != Valid {
				t.Errorf("verdict %v, want valid", res.Verdict)
			}
			if tt.starved == 0 {
				return
			}
			if res.Verdict != Invalid || len(res.Violations) != 1 || !strings.Contains(res.Violations[0].Message, tt.want) {
				t.Fatalf("got %v %v, want invalid with %q", res.Verdict, res.Violations, tt.want)
			}
			waiter := int64(slices.IndexFunc(ops, func(op history.Op) bool { return op.WaitMs > 0 }))
			if v := res.Violations[0]; v.Window[1]-v.Window[0] <= 250*unit || len(v.Minimal) != 1 || v.Minimal[0] != waiter {
				t.Errorf("violation window %v, minimal %v: want the span (over 250ms) and the waiter #%d", v.Window, v.Minimal, waiter)
			}
		})
	}
}

// faultAt is the nemesis op of fault's phase ("start", "stop") at at.
func faultAt(fault, phase string, at int64) history.Op {
	return history.Op{Process: history.NemesisProcess, F: history.Nemesis, Type: history.OK, Call: at, Return: at,
		Value: &history.NemesisValue{Fault: fault, Phase: phase, Targets: []string{"n1"}}}
}
