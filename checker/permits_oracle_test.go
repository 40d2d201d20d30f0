package checker

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The shapes' oracle decides one key by the timeline of DESIGN "Shapes
// beyond the mutex" with numbers, sharing no code with the model: every
// choice of which info ops took effect (as ok), every order of the ops
// that did, every instant for each (integer milliseconds), every true
// end X of each lease (integer milliseconds in [E - eps, E + eps]), and,
// where an op's instant equals a lease's X, both readings (held, or gone
// from then on); valid iff one timeline satisfies the shape's table at
// every op. Bounds are closed, as the mutex model reads its table.
//
// Why whole milliseconds are enough: the histories' times, TTLs, eps and
// horizon are whole milliseconds, and once the order, the ops that took
// effect and, at each op, which leases are held are fixed, a timeline is
// a solution of closed difference constraints over the instants and the
// X's (call <= t <= ret, t_prev <= t, X - t_set within TTL +- eps, t <= X
// for a held lease, X <= t for a gone one) with integer constants. Such a
// system, if feasible, has an integer solution (shortest-path distances
// over integer weights), which satisfies the same held and gone readings:
// so the grid finds a timeline iff a real one exists.

// shapeOracleOp is an op as the oracle reads it, in milliseconds.
type shapeOracleOp struct {
	f              history.Func
	typ            history.Type
	token          string
	ttl, call, ret int64
	add, write     bool
}

// shapeOracle is one search; shape's rule is its own, written out from
// the DESIGN table (k > 0: a semaphore of k permits; 0: read-write).
type shapeOracle struct {
	ops        []shapeOracleOp
	k          int
	writerPref bool
	eps        int64
	failed     map[string]bool // states from which no timeline goes on
}

type oracleLease struct {
	token string
	write bool
	e, x  int64
}

// oracleShapeSays decides h by the timeline with numbers.
func oracleShapeSays(h shapeHistory) Verdict {
	const ms = int64(time.Millisecond)
	var ops []shapeOracleOp
	var infos []int
	for _, op := range h.ops {
		if op.F == history.Write {
			continue
		}
		b := op.ClockBound
		o := shapeOracleOp{f: op.F, typ: op.Type, token: op.Token, ttl: op.TTLms, add: op.Mode == history.ExtendAdd,
			write: op.Access == history.AccessWrite, call: max(0, op.Call-b) / ms, ret: (op.Return + b) / ms}
		if op.Type == history.Info && !op.Answered {
			o.ret += int64(h.horizon) / ms
		}
		if o.typ == history.Info {
			infos = append(infos, len(ops))
			if o.token == "" {
				o.token = "?" + string(rune('a'+len(ops)))
			}
		}
		ops = append(ops, o)
	}
	// The info ops that did not take effect start out done: what is left
	// to place is then the same whichever did not, so the searches of
	// every choice share what they learnt (failed).
	o := shapeOracle{ops: ops, k: h.k, writerPref: h.writerPref, eps: int64(h.eps) / ms, failed: map[string]bool{}}
	for sub := 0; sub < 1<<len(infos); sub++ {
		var done uint32
		for j, i := range infos {
			if sub&(1<<j) == 0 {
				done |= 1 << i
			}
		}
		if o.dfs(done, 0, nil) {
			return Valid
		}
	}
	return Invalid
}

// dfs places the next op after those in done (placed, or info ops that
// did not take effect), the last at instant last, with leases the leases
// not yet released nor gone.
func (o *shapeOracle) dfs(done uint32, last int64, leases []oracleLease) bool {
	if done == 1<<len(o.ops)-1 {
		return true
	}
	key := o.key(done, last, leases)
	if o.failed[key] || o.orphaned(done, leases) {
		return false
	}
	for i, op := range o.ops {
		if done&(1<<i) != 0 {
			continue
		}
		for t := max(last, op.call); t <= op.ret && !o.stranded(done, i, t); t++ {
			if o.at(done|1<<i, i, t, leases) {
				return true
			}
		}
	}
	o.failed[key] = true
	return false
}

// orphaned reports whether an ok release or extend left to place names a
// lease neither held now nor granted by an acquire left to place: it can
// never find its lease held (a prune, no more).
func (o *shapeOracle) orphaned(done uint32, leases []oracleLease) bool {
	for i, op := range o.ops {
		if done&(1<<i) != 0 || op.f == history.Acquire || op.typ != history.OK {
			continue
		}
		if slices.ContainsFunc(leases, func(l oracleLease) bool { return l.token == op.token }) {
			continue
		}
		granted := false
		for j, a := range o.ops {
			granted = granted || done&(1<<j) == 0 && a.f == history.Acquire && a.typ != history.Fail && a.token == op.token
		}
		if !granted {
			return true
		}
	}
	return false
}

// stranded reports whether an op other than i left to place returned
// before t: it could no longer go after.
func (o *shapeOracle) stranded(done uint32, i int, t int64) bool {
	for j, p := range o.ops {
		if j != i && done&(1<<j) == 0 && p.ret < t {
			return true
		}
	}
	return false
}

// at tries op i at instant t: every reading of the leases whose X is t,
// then the table, then every X of a lease it sets.
func (o *shapeOracle) at(done uint32, i int, t int64, leases []oracleLease) bool {
	// leases are sorted by X: those before from are gone, those from
	// to past ties have X = t.
	from, _ := slices.BinarySearchFunc(leases, t, func(l oracleLease, t int64) int { return cmpInt(l.x, t) })
	past := from
	for past < len(leases) && leases[past].x == t {
		past++
	}
	ties := leases[from:past]
	for sub := 0; sub < 1<<len(ties); sub++ {
		held := make([]oracleLease, 0, len(leases)-from+1)
		for j, l := range ties {
			if sub&(1<<j) == 0 { // read as still held at t
				held = append(held, l)
			}
		}
		if o.apply(done, i, t, append(held, leases[past:]...)) {
			return true
		}
	}
	return false
}

// apply checks op i's row of the table with held the leases held at t,
// and goes on with its effect.
func (o *shapeOracle) apply(done uint32, i int, t int64, held []oracleLease) bool {
	op := o.ops[i]
	ok := op.typ != history.Fail
	j := slices.IndexFunc(held, func(l oracleLease) bool { return l.token == op.token })
	if !o.legal(held, op, ok, j >= 0, t) {
		return false
	}
	switch {
	case !ok:
		return o.dfs(done, t, held)
	case op.f == history.Release:
		return o.dfs(done, t, slices.Delete(held, j, j+1))
	case op.f == history.Acquire:
		return o.withEnd(done, t, held, oracleLease{token: op.token, write: op.write, e: t + op.ttl})
	}
	l := held[j]
	l.e = t + op.ttl
	if op.add {
		l.e = held[j].e + op.ttl
	}
	return o.withEnd(done, t, slices.Delete(held, j, j+1), l)
}

// withEnd goes on with l added, for every X it may have (held stays
// sorted by X).
func (o *shapeOracle) withEnd(done uint32, t int64, held []oracleLease, l oracleLease) bool {
	for x := l.e - o.eps; x <= l.e+o.eps; x++ {
		l.x = x
		i, _ := slices.BinarySearchFunc(held, l, cmpOracleLease)
		if o.dfs(done, t, slices.Insert(slices.Clone(held), i, l)) {
			return true
		}
	}
	return false
}

func cmpOracleLease(a, b oracleLease) int {
	return cmpInt(a.x, b.x)*4 + cmpInt(a.e, b.e)*2 + strings.Compare(a.token, b.token)
}

// legal is the DESIGN table: mine says op's own lease is held. A token
// names one lease, so a grant needs its token's earlier lease gone.
func (o *shapeOracle) legal(held []oracleLease, op shapeOracleOp, ok, mine bool, t int64) bool {
	if op.f != history.Acquire {
		return mine == ok
	}
	if ok && mine {
		return false
	}
	if o.k > 0 {
		return ok == (len(held) < o.k)
	}
	writer := slices.ContainsFunc(held, func(l oracleLease) bool { return l.write })
	switch {
	case op.write:
		return ok == (len(held) == 0)
	case ok:
		return !writer
	}
	return writer || o.writerPref && o.writerInFlight(t)
}

// writerInFlight reports whether a write acquire's interval holds t.
func (o *shapeOracle) writerInFlight(t int64) bool {
	return slices.ContainsFunc(o.ops, func(w shapeOracleOp) bool {
		return w.f == history.Acquire && w.write && w.call <= t && t <= w.ret
	})
}

func (o *shapeOracle) key(done uint32, last int64, leases []oracleLease) string {
	ls := leases // sorted by cmpOracleLease
	b := make([]byte, 0, 16+16*len(ls))
	b = binary.AppendUvarint(b, uint64(done))
	b = binary.AppendVarint(b, last)
	for _, l := range ls {
		b = append(b, l.token...)
		b = append(b, 0, byte(btoi(l.write)))
		b = binary.AppendVarint(b, l.e)
		b = binary.AppendVarint(b, l.x)
	}
	return string(b)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
