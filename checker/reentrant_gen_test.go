package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// reClient is one simulated client of a reentrant lock: its owner token
// and the depth it believes it holds, and its next op's interval and the
// instant it takes effect at.
type reClient struct {
	call, inst, ret int64
	token           string
	depth           int
}

// reSimLease is a lease the simulated lock holds: its holds and true end.
type reSimLease struct {
	holds int
	x     int64
}

// simReentrant simulates a correct reentrant lock on one key: 2 to 4
// clients each acquire with a token of their own, re-enter up to depth
// 3, maybe extend, and release a hold at a time, each op taking effect at
// an instant in its interval and decided there by the table (a re-entry
// on a lease that had ended is a new lease of one hold, whose holder's
// releases past it then fail); some replies are lost (info ops, taken
// effect or not). Up to n ops.
func simReentrant(r *rand.Rand, n int) oracleHistory {
	const ms = int64(time.Millisecond)
	h := oracleHistory{eps: time.Duration(r.Int64N(3)) * time.Millisecond,
		horizon: time.Duration(r.Int64N(12)) * time.Millisecond, label: "simulated correct reentrant lock"}
	eps := int64(h.eps / time.Millisecond)
	leases := map[string]reSimLease{}
	cs := make([]reClient, 2+r.IntN(3))
	next := func(cl *reClient, from int64) {
		cl.call = from + r.Int64N(6)
		cl.inst = cl.call + r.Int64N(4)
		cl.ret = cl.inst + r.Int64N(4)
	}
	for c := range cs {
		next(&cs[c], 0)
	}
	tok := 0
	for len(h.ops) < n {
		c := 0
		for i := range cs {
			if cs[i].inst < cs[c].inst {
				c = i
			}
		}
		cl := &cs[c]
		for t, l := range leases {
			if cl.inst >= l.x {
				delete(leases, t)
			}
		}
		if cl.depth == 0 {
			tok++
			cl.token = fmt.Sprintf("o%d", tok)
		}
		op := history.Op{Process: c, Key: "k", Call: cl.call * ms, Return: cl.ret * ms, Token: cl.token, Type: history.Fail}
		ttl := 3 + r.Int64N(20)
		x := func(e int64) int64 { return e + r.Int64N(2*eps+1) - eps }
		l, mine := leases[cl.token]
		switch choice := r.IntN(6); {
		case cl.depth == 0 || cl.depth < 3 && choice < 2:
			op.F, op.TTLms, op.Depth = history.Acquire, ttl, cl.depth+1
			if len(leases) == btoi(mine) {
				if !mine && cl.depth > 0 {
					h.label = "simulated correct reentrant lock, a re-entry restarting its count"
				}
				leases[cl.token] = reSimLease{l.holds + 1, x(cl.inst + ttl)}
				op.Type = history.OK
				cl.depth++
			} else {
				cl.depth = 0
			}
		case choice == 2:
			op.F, op.TTLms, op.Type = history.Extend, ttl, history.Fail
			if r.IntN(2) == 0 {
				op.Mode = history.ExtendAdd
			}
			switch {
			case !mine:
				cl.depth = 0
			case op.Mode == history.ExtendAdd:
				op.Type, l.x = history.OK, l.x+ttl
			default:
				op.Type, l.x = history.OK, x(cl.inst+ttl)
			}
			if mine {
				leases[cl.token] = l
			}
		default:
			op.F, cl.depth = history.Release, cl.depth-1
			switch {
			case !mine:
				cl.depth = 0
			case l.holds > 1:
				op.Type, l.holds = history.OK, l.holds-1
				leases[cl.token] = l
			default:
				op.Type = history.OK
				delete(leases, cl.token)
			}
		}
		if r.IntN(6) == 0 {
			loseReentrantReply(r, &h, cl, &op)
		}
		next(cl, cl.ret)
		h.ops = append(h.ops, op)
	}
	renumber(&h)
	return h
}

// loseReentrantReply makes op indeterminate, as loseReply does: the
// client gave up (before the lock applied it, within the horizon), or it
// was answered without its outcome; either way it starts over with a
// new owner.
func loseReentrantReply(r *rand.Rand, h *oracleHistory, cl *reClient, op *history.Op) {
	const ms = int64(time.Millisecond)
	op.Type, op.Token, cl.depth = history.Info, cl.token, 0
	switch r.IntN(3) {
	case 0:
		hz := int64(h.horizon / time.Millisecond)
		op.Return = max(cl.call, cl.inst-r.Int64N(hz+1)) * ms
	case 1:
		op.Answered = true
	}
}

// mutateReentrant changes h as mutate does, and now and then makes an
// acquire another owner's re-entry (a lock that checks no owner) or a
// release of a hold the owner no longer has.
func mutateReentrant(r *rand.Rand, h oracleHistory) oracleHistory {
	m := mutate(r, h)
	if r.IntN(3) != 0 {
		return m
	}
	m.ops = slices.Clone(m.ops)
	i, j := r.IntN(len(m.ops)), r.IntN(len(m.ops))
	switch a, b := &m.ops[i], m.ops[j]; {
	case a.F == history.Acquire && b.Token != "" && b.Token != a.Token:
		a.Token, a.Type = b.Token, history.OK
		m.label += fmt.Sprintf(", #%d re-enters %s's lease", i, b.Token)
	case a.F == history.Release && a.Type == history.Fail:
		a.Type = history.OK
		m.label += fmt.Sprintf(", #%d released ok", i)
	}
	return m
}
