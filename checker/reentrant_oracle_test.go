package checker

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The reentrant oracle decides one key by the timeline of DESIGN "Shapes
// beyond the mutex" with numbers, sharing no code with the model, as
// the shapes' oracle does (permits_oracle_test.go, whose comment says
// why whole milliseconds are enough): every choice of which info ops
// took effect (as ok), every order of those that did, every instant for
// each, every true end X of each lease, and where an op's instant is a
// lease's X both readings; valid iff one timeline satisfies the table at
// every op. A lease is an owner's (its token) with its holds: an
// owner's grant while it holds adds a hold and sets the lease's end
// anew, a grant while it does not is a new lease of one hold, and a
// grant while another owner holds is illegal; a release takes a hold
// away and ends the lease at none.

type reOracleOp struct {
	f              history.Func
	typ            history.Type
	token          string
	ttl, call, ret int64
	add            bool
}

type reOracle struct {
	ops    []reOracleOp
	eps    int64
	failed map[string]bool
}

// reLease is a held lease: its owner, holds, E and true end X.
type reLease struct {
	token string
	holds int
	e, x  int64
}

// oracleReentrantSays decides h by the timeline with numbers.
func oracleReentrantSays(h oracleHistory) Verdict {
	const ms = int64(time.Millisecond)
	var ops []reOracleOp
	var infos []int
	for _, op := range h.ops {
		if op.F == history.Write {
			continue
		}
		b := op.ClockBound
		o := reOracleOp{f: op.F, typ: op.Type, token: op.Token, ttl: op.TTLms, add: op.Mode == history.ExtendAdd,
			call: max(0, op.Call-b) / ms, ret: (op.Return + b) / ms}
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
	o := reOracle{ops: ops, eps: int64(h.eps) / ms, failed: map[string]bool{}}
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

func (o *reOracle) dfs(done uint32, last int64, leases []reLease) bool {
	if done == 1<<len(o.ops)-1 {
		return true
	}
	key := o.key(done, last, leases)
	if o.failed[key] {
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

// stranded reports whether an op other than i left to place returned
// before t.
func (o *reOracle) stranded(done uint32, i int, t int64) bool {
	for j, p := range o.ops {
		if j != i && done&(1<<j) == 0 && p.ret < t {
			return true
		}
	}
	return false
}

// at tries op i at t, with every reading of the leases whose X is t
// (held, or gone from then on); those with X before t are gone.
func (o *reOracle) at(done uint32, i int, t int64, leases []reLease) bool {
	var ties, held []reLease
	for _, l := range leases {
		switch {
		case l.x == t:
			ties = append(ties, l)
		case l.x > t:
			held = append(held, l)
		}
	}
	for sub := 0; sub < 1<<len(ties); sub++ {
		h := slices.Clone(held)
		for j, l := range ties {
			if sub&(1<<j) == 0 {
				h = append(h, l)
			}
		}
		if o.apply(done, i, t, h) {
			return true
		}
	}
	return false
}

// apply checks op i's row of the table with held the leases held at t,
// and goes on with its effect.
func (o *reOracle) apply(done uint32, i int, t int64, held []reLease) bool {
	op := o.ops[i]
	ok := op.typ != history.Fail
	j := slices.IndexFunc(held, func(l reLease) bool { return l.token == op.token })
	others := len(held) - btoi(j >= 0)
	switch {
	case op.f == history.Acquire && !ok:
		return others > 0 && o.dfs(done, t, held)
	case op.f == history.Acquire:
		if others > 0 {
			return false
		}
		l := reLease{token: op.token, holds: 1, e: t + op.ttl}
		if j >= 0 {
			l.holds = held[j].holds + 1
			held = slices.Delete(held, j, j+1)
		}
		return o.withEnd(done, t, held, l)
	case ok != (j >= 0): // release or extend: ok iff the owner's lease is held
		return false
	case !ok:
		return o.dfs(done, t, held)
	case op.f == history.Release:
		l := held[j]
		held = slices.Delete(held, j, j+1)
		if l.holds > 1 {
			l.holds--
			held = append(held, l) // its end as it was
		}
		return o.dfs(done, t, sortLeases(held))
	}
	l := held[j]
	l.e = t + op.ttl
	if op.add {
		l.e = held[j].e + op.ttl
	}
	return o.withEnd(done, t, slices.Delete(held, j, j+1), l)
}

// withEnd goes on with l added, for every X it may have.
func (o *reOracle) withEnd(done uint32, t int64, held []reLease, l reLease) bool {
	for x := l.e - o.eps; x <= l.e+o.eps; x++ {
		l.x = x
		if o.dfs(done, t, sortLeases(append(slices.Clone(held), l))) {
			return true
		}
	}
	return false
}

func sortLeases(ls []reLease) []reLease {
	slices.SortFunc(ls, func(a, b reLease) int { return strings.Compare(a.token, b.token) })
	return ls
}

func (o *reOracle) key(done uint32, last int64, leases []reLease) string {
	b := binary.AppendUvarint(nil, uint64(done))
	b = binary.AppendVarint(b, last)
	for _, l := range leases {
		b = append(b, l.token...)
		b = append(b, 0)
		b = binary.AppendVarint(b, int64(l.holds))
		b = binary.AppendVarint(b, l.e)
		b = binary.AppendVarint(b, l.x)
	}
	return string(b)
}
