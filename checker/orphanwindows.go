package checker

import (
	"slices"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// Orphan windows. An orphan (an info acquire whose token no other op
// names) can take effect only where the key is free, and once it has, it
// holds the key for its whole TTL: no op can release or extend a lease
// whose token nothing names. So two kinds of instant are closed to it in
// every timeline:
//
//   - inside a lease that is surely held: an ok acquire a, of a token
//     that no other acquire carries, set its lease at some t_a <= a.ret,
//     and the lease lasts to E >= t_a + ttl >= a.call + ttl. Only an op of
//     its own token (which takes effect no earlier than its call) or an
//     acquire at E - eps or later changes the holder, so the key is held
//     by it throughout (a.ret, h), h the smaller of a.call + ttl - eps and
//     the first call of another op of its token; an acquire is legal there
//     only at E - eps or later, which h does not reach.
//   - around an ok acquire g of another token: an orphan set at t holds
//     the key until t + ttl - eps at least (nothing else ends it), so g,
//     which takes effect in [g.call, g.ret], cannot come after it when
//     g.ret < t + ttl - eps; and g cannot come before it when t < h_g,
//     h_g as in the first rule for g's lease (g.call if g's token has
//     another acquire): g would hold the key at t. Where neither order
//     is left, t is closed: on (g.ret - ttl + eps, max(g.call, h_g)).
//     For t < g.call only the first order exists.
//
// Narrowing an orphan's interval to the first and the last instant left
// open, and noting the closed gaps inside it, removes only instants no
// timeline uses, so no verdict changes (exact); an orphan with none left
// took effect in no timeline and is dropped, as an info op that did not
// take effect changes nothing. The gaps are read only by the interval
// reasoning (holdWindows, orphanShortfall), which then bounds each open
// stretch on its own; porcupine and the witness use [call, ret], which
// the gaps only narrow further, so their search is unchanged. The
// reductions after it see the narrower windows: a failed acquire that
// only an orphan blocked by a surely held lease could have covered is
// then uncovered (uncoveredFail), where porcupine would search the
// orphans' orders (a node restarted empty under a held lease, the key
// then taken by an unacknowledged grant: checker/testdata/
// wait-all-kill-none.jsonl, unknown after 2 minutes before, invalid in
// milliseconds now). TestLinearizable_AgreesWithOracle* check it.

// openSpan is an open interval of instants (from, to).
type openSpan struct{ from, to int64 }

// narrowOrphans returns lops with each orphan's interval narrowed to the
// instants left open to it, and the orphans left none dropped. The
// orphans narrowed are copies: lops's ops are not changed.
func narrowOrphans(m leaseModel, lops []*lockOp) []*lockOp {
	_, orphans := orphansOf(lops)
	if len(orphans) == 0 {
		return lops
	}
	closed := closedSpans(m, lops)
	if closed.len() == 0 {
		return lops
	}
	repl := map[*lockOp]*lockOp{}
	for _, o := range orphans {
		// Rule 2's spans depend on the orphan's TTL.
		spans := closed.forTTL(o.ttl, m.eps)
		from, to := firstOpen(spans, o.call), lastOpen(spans, o.ret)
		if from > to {
			repl[o] = nil
			continue
		}
		gaps := inside(spans, from, to)
		if from != o.call || to != o.ret || len(gaps) > 0 {
			n := *o
			n.call, n.ret, n.gaps = from, to, gaps
			repl[o] = &n
		}
	}
	if len(repl) == 0 {
		return lops
	}
	out := make([]*lockOp, 0, len(lops))
	for _, lo := range lops {
		n, ok := repl[lo]
		switch {
		case !ok:
			out = append(out, lo)
		case n != nil:
			out = append(out, n)
		}
	}
	return out
}

// closing are the instants closed to orphans: held are rule 1's spans;
// grants are the ok acquires of rule 2 (with h_g), whose spans depend on
// an orphan's TTL.
type closing struct {
	held   []openSpan
	grants []grant
}

type grant struct {
	g *lockOp
	h int64
}

func (c closing) len() int { return len(c.held) + len(c.grants) }

// closedSpans gathers rule 1's spans and rule 2's grants from lops.
func closedSpans(m leaseModel, lops []*lockOp) closing {
	type tok struct {
		acquires int
		ok       *lockOp
		first    int64 // first call of an op of the token other than its ok acquire
	}
	toks := map[string]*tok{}
	var c closing
	for _, lo := range lops {
		t := toks[lo.token]
		if t == nil {
			t = &tok{first: inf}
			toks[lo.token] = t
		}
		if lo.f == history.Acquire {
			t.acquires++
			if lo.typ == history.OK {
				t.ok = lo
				continue
			}
		}
		t.first = min(t.first, lo.call)
	}
	for _, lo := range lops {
		// An ok acquire without a token (no run records one; mutated
		// histories do) sets no holder in the model: it closes nothing.
		if lo.f != history.Acquire || lo.typ != history.OK || lo.token == "" {
			continue
		}
		t := toks[lo.token]
		h := lo.call
		if t.acquires == 1 {
			h = max(h, min(lo.call+lo.ttl-m.eps, t.first))
			if h > lo.ret {
				c.held = append(c.held, openSpan{lo.ret, h})
			}
		}
		c.grants = append(c.grants, grant{lo, h})
	}
	return c
}

// forTTL is the union of the spans closed to an orphan of ttl, merged
// into disjoint open spans in order.
func (c closing) forTTL(ttl, eps int64) []openSpan {
	spans := slices.Clone(c.held)
	for _, g := range c.grants {
		if from := g.g.ret - ttl + eps; from < g.h {
			spans = append(spans, openSpan{from, g.h})
		}
	}
	slices.SortFunc(spans, func(a, b openSpan) int { return cmpInt(a.from, b.from) })
	var out []openSpan
	for _, s := range spans {
		// Open spans that only touch leave their common end open.
		if n := len(out); n > 0 && s.from < out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// firstOpen is the first instant at or after x in no span of spans
// (disjoint, in order).
func firstOpen(spans []openSpan, x int64) int64 {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to > x })
	if i < len(spans) && spans[i].from < x {
		return spans[i].to
	}
	return x
}

// lastOpen is the last instant at or before x in no span of spans.
func lastOpen(spans []openSpan, x int64) int64 {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to > x })
	if i < len(spans) && spans[i].from < x {
		return spans[i].from
	}
	return x
}

// inside are the spans of spans (disjoint, in order) strictly between
// from and to, both open instants.
func inside(spans []openSpan, from, to int64) []openSpan {
	var out []openSpan
	for _, s := range spans {
		if s.from >= from && s.to <= to {
			out = append(out, s)
		}
	}
	return out
}
