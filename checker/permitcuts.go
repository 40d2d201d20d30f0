package checker

import (
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// permitCuts splits a key's ops (in their order) at every instant c that
// no op's interval reaches (each returned, an info op could take effect,
// before c, or was called after it) and after which no lease of the ops
// before it can be held: each lease's token had its last op before c be
// a definite release (ok or fail) or a definite extend fail, called after
// the token's other ops had returned, or each lease of the token had
// certainly ended by c (its latest expiry, as reach bounds it, plus eps,
// before c). Then in every timeline the ops before c come first and leave
// no lease that a later op can find held, which is what the initial state
// admits too (a lease certainly gone admits the same futures as none, as
// the model's dropping of such leases says); so the key's ops are
// linearizable iff each segment is, each checked from the initial state.
// The split is exact, as cuts is for the mutex (the oracle tests check it
// with and without it), and it keeps porcupine's memory, quadratic in the
// ops it searches at once, to a segment's.
func permitCuts(ops []*permitOp, eps int64) [][]*permitOp {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b *permitOp) int { return cmpInt(a.call, b.call) })
	tr := newOpenLeases()
	var at []int64 // calls of the first op after each cut, ascending
	maxRet := int64(-1)
	for i, o := range byCall {
		if i > 0 && maxRet < o.call && o.call > at0(at) && tr.allEnded(o.call, eps) {
			at = append(at, o.call)
		}
		tr.see(o)
		maxRet = max(maxRet, o.ret)
	}
	if len(at) == 0 {
		return [][]*permitOp{ops}
	}
	segs := make([][]*permitOp, len(at)+1)
	for _, o := range ops {
		// The segment of o: how many cuts were at or before its call.
		j, found := slices.BinarySearch(at, o.call)
		if found {
			j++
		}
		segs[j] = append(segs[j], o)
	}
	return segs
}

func at0(at []int64) int64 {
	if len(at) == 0 {
		return -1
	}
	return at[len(at)-1]
}

// openLeases follows, in call order, the tokens whose leases may still be
// held: open are those granted (ok or info acquire) and not yet closed by
// a definite end.
type openLeases struct {
	r       *reach
	lastRet map[string]int64
	open    map[string]bool
}

func newOpenLeases() *openLeases {
	return &openLeases{r: newReach(), lastRet: map[string]int64{}, open: map[string]bool{}}
}

// see records o, the next op in call order.
func (tr *openLeases) see(o *permitOp) {
	if o.token == "" {
		return
	}
	prev, seen := tr.lastRet[o.token]
	ends := o.typ == history.Fail && o.f != history.Acquire || o.typ == history.OK && o.f == history.Release
	switch {
	case ends && (!seen || o.call > prev):
		delete(tr.open, o.token)
	case o.typ != history.Fail && (o.f == history.Acquire || seen):
		tr.open[o.token] = true
	}
	if o.typ != history.Fail && o.f != history.Release {
		tr.r.see(o.token, o.f == history.Extend && o.add, o.ret, o.ttl)
	}
	tr.lastRet[o.token] = max(prev, o.ret)
}

// allEnded reports whether no open token's lease can be held at c or
// after, and closes those certainly expired.
func (tr *openLeases) allEnded(c, eps int64) bool {
	for tok := range tr.open {
		// A token no acquire or replacing extend set holds nothing.
		if e, ok := tr.r.set[tok]; ok && addBound(addBound(e, tr.r.add[tok]), eps) >= c {
			return false
		}
		delete(tr.open, tok)
	}
	return true
}
