package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// shapeHistory is one key's history with its shape: a semaphore of k
// permits (k > 0) or a read-write lock (k = 0), writers preferred or not.
type shapeHistory struct {
	oracleHistory
	k          int
	writerPref bool
}

func (h shapeHistory) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, k %d, writer preference %v (eps %v, horizon %v):\n", h.label, h.k, h.writerPref, h.eps, h.horizon)
	for _, op := range h.ops {
		fmt.Fprintf(&b, "  #%d p%d %s %s %s access=%q ttl=%dms mode=%q [%dms, %dms] answered=%v\n", op.Index, op.Process, op.F, op.Type, op.Token,
			op.Access, op.TTLms, op.Mode, op.Call/1e6, op.Return/1e6, op.Answered)
	}
	return b.String()
}

// simLock is a simulated correct lock of a shape: the leases it holds
// now, each with its true end.
type simLock struct {
	h      *shapeHistory
	leases map[string]simLease
}

type simLease struct {
	write bool
	x     int64 // true end, ms
}

// simClient is one client: its next op takes effect at inst.
type simClient struct {
	call, inst, ret int64
	lease           string // the lease it believes it holds
	write           bool   // its next acquire is a write
}

// simShape simulates a correct lock of h's shape on one key: 2 to 4
// clients loop acquire, maybe extend, release, each op taking effect at an
// instant inside its interval and decided there by the table, each lease
// ending at a true end within eps of its E; a writer-preferring lock
// refuses readers while a write acquire is in flight. Some replies are
// lost (info ops, taken effect or not). Up to n ops.
func simShape(r *rand.Rand, n, k int, writerPref bool) shapeHistory {
	h := shapeHistory{oracleHistory: oracleHistory{eps: time.Duration(r.Int64N(3)) * time.Millisecond,
		horizon: time.Duration(r.Int64N(12)) * time.Millisecond, label: "simulated correct lock"}, k: k, writerPref: writerPref}
	lk := simLock{h: &h, leases: map[string]simLease{}}
	cs := make([]simClient, 2+r.IntN(3))
	for c := range cs {
		lk.next(r, &cs[c], 0)
	}
	tok := 0
	for len(h.ops) < n {
		c := 0
		for i := range cs {
			if cs[i].inst < cs[c].inst {
				c = i
			}
		}
		if cs[c].lease == "" {
			tok++
		}
		op := lk.decide(r, cs, c, fmt.Sprintf("t%d", tok))
		lk.loseReply(r, &cs[c], &op)
		lk.next(r, &cs[c], cs[c].ret)
		h.ops = append(h.ops, op)
	}
	// Write acquires still in flight may have kept readers out: they are
	// recorded as info, as a run's end records them.
	for c, cl := range cs {
		if writerPref && cl.lease == "" && cl.write {
			tok++
			h.ops = append(h.ops, history.Op{Process: c, Key: "k", F: history.Acquire, Type: history.Info, Token: fmt.Sprintf("t%d", tok),
				Access: history.AccessWrite, TTLms: 10, Call: cl.call * int64(time.Millisecond), Return: cl.ret * int64(time.Millisecond)})
		}
	}
	renumber(&h.oracleHistory)
	return h
}

func (lk *simLock) next(r *rand.Rand, cl *simClient, from int64) {
	cl.call = from + r.Int64N(6)
	cl.inst = cl.call + r.Int64N(4)
	cl.ret = cl.inst + r.Int64N(4)
	cl.write = lk.h.k == 0 && r.IntN(2) == 0
}

// decide is client c's next op, taking effect at its instant.
func (lk *simLock) decide(r *rand.Rand, cs []simClient, c int, tok string) history.Op {
	const ms = int64(time.Millisecond)
	cl := &cs[c]
	inst := cl.inst
	for t, l := range lk.leases {
		if inst >= l.x {
			delete(lk.leases, t)
		}
	}
	op := history.Op{Process: c, Key: "k", Call: cl.call * ms, Return: cl.ret * ms}
	ttl := 5 + r.Int64N(20)
	eps := int64(lk.h.eps / time.Millisecond)
	x := func(e int64) int64 { return e + r.Int64N(2*eps+1) - eps }
	switch {
	case cl.lease == "":
		op.F, op.TTLms, op.Token, op.Type = history.Acquire, ttl, tok, history.Fail
		if lk.h.k > 0 {
			op.Permits = lk.h.k
		} else {
			op.Access = map[bool]string{true: history.AccessWrite, false: history.AccessRead}[cl.write]
		}
		if lk.grants(cs, c, inst) {
			lk.leases[tok] = simLease{cl.write, x(inst + ttl)}
			op.Type, cl.lease = history.OK, tok
		}
	case r.IntN(3) == 0:
		op.F, op.TTLms, op.Token, op.Type = history.Extend, ttl, cl.lease, history.Fail
		l, held := lk.leases[cl.lease]
		add := r.IntN(2) == 0
		if add {
			op.Mode = history.ExtendAdd
		}
		switch {
		case !held:
			cl.lease = ""
		case add:
			op.Type, l.x = history.OK, l.x+ttl
		default:
			op.Type, l.x = history.OK, x(inst+ttl)
		}
		if held {
			lk.leases[cl.lease] = l
		}
	default:
		op.F, op.Token, op.Type = history.Release, cl.lease, history.Fail
		if _, held := lk.leases[cl.lease]; held {
			op.Type = history.OK
			delete(lk.leases, cl.lease)
		}
		cl.lease = ""
	}
	return op
}

// grants says whether the lock grants client c's acquire at inst.
func (lk *simLock) grants(cs []simClient, c int, inst int64) bool {
	writers := 0
	for _, l := range lk.leases {
		writers += btoi(l.write)
	}
	switch {
	case lk.h.k > 0:
		return len(lk.leases) < lk.h.k
	case cs[c].write:
		return len(lk.leases) == 0
	case writers > 0:
		return false
	}
	return !lk.h.writerPref || !lk.writerInFlight(cs, c, inst)
}

// writerInFlight: another client's write acquire is called and not yet
// decided, or one recorded is within its interval (to its horizon).
func (lk *simLock) writerInFlight(cs []simClient, c int, inst int64) bool {
	const ms = int64(time.Millisecond)
	for i, o := range cs {
		if i != c && o.lease == "" && o.write && o.call <= inst {
			return true
		}
	}
	for _, op := range lk.h.ops {
		if op.F == history.Acquire && op.Access == history.AccessWrite && op.Call <= inst*ms && inst*ms <= op.Latest(int64(lk.h.horizon)) {
			return true
		}
	}
	return false
}

// loseReply makes one op in six indeterminate, as simKey does: the client
// gave up (before the lock applied it, within the horizon), or it was
// answered without its outcome.
func (lk *simLock) loseReply(r *rand.Rand, cl *simClient, op *history.Op) {
	const ms = int64(time.Millisecond)
	if r.IntN(6) != 0 {
		return
	}
	if op.Type == history.Fail && op.F != history.Acquire || op.F == history.Acquire && op.Type == history.OK {
		cl.lease = "" // it does not know it holds it
	}
	op.Type = history.Info
	switch r.IntN(3) {
	case 0:
		hz := int64(lk.h.horizon / time.Millisecond)
		op.Return = max(cl.call, cl.inst-r.Int64N(hz+1)) * ms
	case 1:
		op.Answered = true
	}
}

// renumber sorts h's ops by return, as the writer records them, and
// numbers them.
func renumber(h *oracleHistory) {
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
}

// mutateShape changes h as mutate does, and for a read-write lock now
// and then flips an acquire's access.
func mutateShape(r *rand.Rand, h shapeHistory) shapeHistory {
	m := h
	m.oracleHistory = mutate(r, h.oracleHistory)
	if h.k == 0 && r.IntN(3) == 0 {
		m.ops = slices.Clone(m.ops)
		if i := r.IntN(len(m.ops)); m.ops[i].F == history.Acquire {
			m.ops[i].Access = map[string]string{history.AccessRead: history.AccessWrite, history.AccessWrite: history.AccessRead}[m.ops[i].Access]
			m.label += fmt.Sprintf(", #%d access %s", i, m.ops[i].Access)
		}
	}
	return m
}
