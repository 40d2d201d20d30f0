package checker

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// The oracle decides one key by the timeline semantics of
// README.md ("The checkers") directly, sharing no code with the model: every
// choice of which info ops took effect, every order of the ops that did
// (only pruned by real time: an op that returned before another was called
// took effect before it), and for each, the rules written out as
// difference constraints over all the instants at once, solved from
// scratch by Floyd-Warshall. Exponential, so for small histories only.

type oracleCons struct {
	i, j int   // variables: 0 is the origin, 1+k op k's instant
	c    int64 // x_i - x_j <= c
}

// oracle reports whether some timeline explains ops (one key).
//
// Info acquires that are interchangeable (the same interval and TTL, and
// tokens no other op names) are a symmetry of the semantics: swapping
// their tokens maps timelines to timelines. So of each class the oracle
// chooses how many took effect, not which (the first ones), and orders
// them only in index order: a stall's dozens of orphans stay enumerable.
func oracle(ops []*lockOp, eps int64) bool {
	class := oracleClasses(ops)
	var classes [][]int // the info ops of each class, in index order
	seen := map[int]int{}
	for i, o := range ops {
		if o.typ != history.Info {
			continue
		}
		c, ok := seen[class[i]]
		if !ok {
			c = len(classes)
			seen[class[i]] = c
			classes = append(classes, nil)
		}
		classes[c] = append(classes[c], i)
	}
	// Two acquires of a class that both took effect are at least its
	// TTL less eps apart (the first's lease is never released, so the
	// second needs it gone, or a lease set after it gone), so no more
	// than fit in the class's interval took effect.
	limit := make([]int, len(classes))
	for c, members := range classes {
		limit[c] = len(members)
		if o := ops[members[0]]; o.ttl > eps {
			limit[c] = min(limit[c], int((o.ret-o.call)/(o.ttl-eps))+1)
		}
	}
	counts := make([]int, len(classes))
	for {
		took := make([]bool, len(ops))
		for i, o := range ops {
			took[i] = o.typ != history.Info
		}
		for c, members := range classes {
			for _, i := range members[:counts[c]] {
				took[i] = true
			}
		}
		o := orc{ops: ops, took: took, eps: eps, used: make([]bool, len(ops)), class: class, v: make([]int, len(ops))}
		for i, t := range took {
			if t {
				o.n++
				o.v[i] = o.n // variable 0 is the origin
			}
		}
		if o.dfs(0, "", -1, 0, -1, nil) {
			return true
		}
		// The next choice of counts, as an odometer.
		c := 0
		for ; c < len(classes) && counts[c] == limit[c]; c++ {
			counts[c] = 0
		}
		if c == len(classes) {
			return false
		}
		counts[c]++
	}
}

// oracleClasses gives each op a class: interchangeable info acquires
// share one, every other op has its own.
func oracleClasses(ops []*lockOp) []int {
	named := map[string]int{}
	for _, o := range ops {
		named[o.token]++
	}
	type sig struct {
		call, ret, ttl int64
	}
	ids := map[sig]int{}
	class := make([]int, len(ops))
	for i, o := range ops {
		class[i] = len(ops) + i
		if o.f == history.Acquire && o.typ == history.Info && named[o.token] == 1 {
			k := sig{o.call, o.ret, o.ttl}
			if _, ok := ids[k]; !ok {
				ids[k] = i
			}
			class[i] = ids[k]
		}
	}
	return class
}

type orc struct {
	ops   []*lockOp
	took  []bool
	used  []bool
	class []int
	v     []int // the variable of each op that took effect
	eps   int64
	n     int
}

// dfs extends an order of depth ops; holder, setter (the op whose instant
// set the lease) and d (E = instant of setter + d) are the lease, last the
// previous op in the order.
func (o *orc) dfs(depth int, holder string, setter int, d int64, last int, cons []oracleCons) bool {
	if depth == o.n {
		return true
	}
	for i, op := range o.ops {
		if o.used[i] || !o.took[i] || o.laterTwin(i) {
			continue
		}
		// An op that took effect and returned before op was called must
		// come first.
		early := false
		for j, p := range o.ops {
			if j != i && !o.used[j] && o.took[j] && p.ret < op.call {
				early = true
			}
		}
		if early {
			continue
		}
		t := o.v[i]
		c := append(slices.Clip(cons), oracleCons{t, 0, op.ret}, oracleCons{0, t, -op.call})
		if last >= 0 {
			c = append(c, oracleCons{o.v[last], t, 0}) // instants non-decreasing
		}
		s := 0
		if setter >= 0 {
			s = o.v[setter]
		}
		nh, ns, nd := holder, setter, d
		mayBeGone := oracleCons{s, t, o.eps - d} // t >= E - eps
		mayBeHeld := oracleCons{t, s, d + o.eps} // t <= E + eps
		ok := op.typ != history.Fail             // info ops that took effect did so as ok
		mine := holder != "" && holder == op.token
		legal := true
		switch {
		case op.f == history.Acquire && ok:
			if holder != "" {
				c = append(c, mayBeGone)
			}
			nh, ns, nd = op.token, i, op.ttl
		case op.f == history.Acquire:
			legal = holder != ""
			c = append(c, mayBeHeld)
		case ok:
			legal = mine
			c = append(c, mayBeHeld)
			switch {
			case op.f == history.Release:
				nh = ""
			case op.add:
				nd = d + op.ttl
			default:
				ns, nd = i, op.ttl
			}
		case mine: // release or extend fail of the holder
			c = append(c, mayBeGone)
			nh = ""
		}
		if !legal || !feasible(o.n+1, c) {
			continue
		}
		o.used[i] = true
		if o.dfs(depth+1, nh, ns, nd, i, c) {
			return true
		}
		o.used[i] = false
	}
	return false
}

// laterTwin reports whether an op of i's class before it took effect and
// is not yet ordered: twins are ordered in index order.
func (o *orc) laterTwin(i int) bool {
	for j := 0; j < i; j++ {
		if o.class[j] == o.class[i] && o.took[j] && !o.used[j] {
			return true
		}
	}
	return false
}

// feasible solves the constraints from scratch: Floyd-Warshall over every
// variable, infeasible iff a negative cycle.
func feasible(n int, cons []oracleCons) bool {
	const none = int64(1) << 62
	d := make([][]int64, n)
	for i := range d {
		d[i] = make([]int64, n)
		for j := range d[i] {
			if i != j {
				d[i][j] = none
			}
		}
	}
	for _, c := range cons {
		d[c.i][c.j] = min(d[c.i][c.j], c.c)
	}
	for k := 0; k < n; k++ {
		for i := 0; i < n; i++ {
			if d[i][k] == none {
				continue
			}
			for j := 0; j < n; j++ {
				if d[k][j] != none && d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
			if d[i][i] < 0 {
				return false
			}
		}
	}
	return true
}

// oracleHistory is one key's history in milliseconds, with the checker
// settings it is judged under.
type oracleHistory struct {
	ops          []history.Op
	eps, horizon time.Duration
	label        string // how it was made
}

func (h oracleHistory) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (eps %v, horizon %v):\n", h.label, h.eps, h.horizon)
	for _, op := range h.ops {
		fmt.Fprintf(&b, "  #%d p%d %s %s %s ttl=%dms mode=%q [%dms, %dms] ±%v answered=%v\n", op.Index, op.Process, op.F, op.Type, op.Token,
			op.TTLms, op.Mode, op.Call/1e6, op.Return/1e6, time.Duration(op.ClockBound), op.Answered)
	}
	return b.String()
}

// oracleSays decides h with the oracle. An op with a clock_bound b took
// effect within [call - b, return + b] (never before the run began), an
// info op up to the horizon later unless it was answered: the oracle
// reads both off the semantics itself, not through toLockOps.
func (h oracleHistory) oracleSays() Verdict {
	var ptrs []*history.Op
	for i := range h.ops {
		if h.ops[i].F != history.Write {
			op := h.ops[i]
			op.Call, op.Return, op.ClockBound = max(0, op.Call-op.ClockBound), op.Return+op.ClockBound, 0
			if op.Type == history.Info && !op.Answered {
				op.Return += int64(h.horizon)
			}
			ptrs = append(ptrs, &op)
		}
	}
	if oracle(toLockOps(ptrs, 0), int64(h.eps)) {
		return Valid
	}
	return Invalid
}

// checkerModes are the ways the checker must agree with the oracle: every
// reduction on, each one off, and none at all.
var checkerModes = []struct {
	name string
	skip reductions
}{
	{"all reductions", 0},
	{"no dominated-drop", skipDominated},
	{"no expiredFail", skipExpiredFail},
	{"no witness", skipWitness},
	{"no orphan-drop", skipOrphans},
	{"no cuts", skipCuts},
	{"no uncovered-fail", skipUncovered},
	{"no cover", skipCover},
	{"no surplus-drop", skipSurplus},
	{"no edf order", skipEDF},
	{"no certain overlap", skipOverlap},
	{"no orphan shortfall", skipShortfall},
	{"no orphan narrowing", skipNarrow},
	{"no unowned release", skipUnowned},
	{"no orphan holders", skipHolders},
	{"every misfit searched", skipSparse},
	{"porcupine alone", skipAll},
}

// agree checks h with the checker in every mode and with the oracle, and
// returns the oracle's verdict.
func agree(t testing.TB, h oracleHistory) Verdict {
	return agreeIn(t, h, nil)
}

// agreeIn is agree in the named modes only (all if names is nil).
func agreeIn(t testing.TB, h oracleHistory, names []string) Verdict {
	want := h.oracleSays()
	for _, mode := range checkerModes {
		if names != nil && !slices.Contains(names, mode.name) {
			continue
		}
		r := Linearizable(context.Background(), h.ops, Options{ClockTolerance: Exactly(h.eps), InfoHorizon: Exactly(h.horizon),
			Timeout: time.Minute, skip: mode.skip}.Resolved())
		if r.Verdict != want {
			t.Fatalf("%s: checker says %s, oracle says %s; violations %+v %+v\n%s", mode.name, r.Verdict, want, r.Violations, r.Undecided, h)
		}
	}
	return want
}

// simKey simulates a correct lease lock on one key: clients loop acquire,
// maybe extend (additive or replacing), release, each op taking effect at
// an instant inside its interval, its outcome decided there by a lease
// whose true expiry is within eps of the model's E. Some replies are lost:
// the op is recorded as info, whether or not it took effect. Up to n ops.
func simKey(r *rand.Rand, n int) oracleHistory {
	const ms = int64(time.Millisecond)
	h := oracleHistory{eps: time.Duration(r.Int64N(4)) * time.Millisecond,
		horizon: time.Duration(r.Int64N(30)) * time.Millisecond, label: "simulated correct lock"}
	type client struct {
		call, inst, ret int64  // its next op: it takes effect at inst
		lease           string // the lease it believes it holds
	}
	cs := make([]client, 1+r.IntN(3))
	next := func(cl *client, from int64) {
		cl.call = from + r.Int64N(8)
		cl.inst = cl.call + r.Int64N(4)
		cl.ret = cl.inst + r.Int64N(4)
	}
	for c := range cs {
		next(&cs[c], 0)
	}
	var holder string
	var expiry int64 // true expiry, in ms
	tok := 0
	for len(h.ops) < n {
		c := 0 // ops take effect in the order of their instants
		for i := range cs {
			if cs[i].inst < cs[c].inst {
				c = i
			}
		}
		cl := &cs[c]
		inst := cl.inst
		op := history.Op{Process: c, Key: "k", Call: cl.call * ms, Return: cl.ret * ms}
		if holder != "" && inst >= expiry {
			holder = "" // expired
		}
		ttl := 5 + r.Int64N(25)
		jitter := r.Int64N(2*int64(h.eps/time.Millisecond)+1) - int64(h.eps/time.Millisecond)
		switch {
		case cl.lease == "":
			tok++
			op.F, op.TTLms, op.Token = history.Acquire, ttl, fmt.Sprintf("t%d", tok)
			if holder == "" {
				holder, expiry, cl.lease = op.Token, inst+ttl+jitter, op.Token
				op.Type = history.OK
			} else {
				op.Type = history.Fail
			}
		case r.IntN(3) == 0:
			op.F, op.TTLms, op.Token = history.Extend, ttl, cl.lease
			add := r.IntN(2) == 0
			if add {
				op.Mode = history.ExtendAdd
			}
			if holder == cl.lease {
				op.Type = history.OK
				if add {
					expiry += ttl
				} else {
					expiry = inst + ttl + jitter
				}
			} else {
				op.Type, cl.lease = history.Fail, ""
			}
		default:
			op.F, op.Token = history.Release, cl.lease
			op.Type = history.Fail
			if holder == cl.lease {
				op.Type, holder = history.OK, ""
			}
			cl.lease = ""
		}
		if r.IntN(6) == 0 { // the reply is lost; the client gives up at ret
			if op.Type == history.Fail && op.F != history.Acquire || op.F == history.Acquire && op.Type == history.OK {
				cl.lease = "" // it does not know it holds it
			}
			if op.F == history.Acquire && op.Type == history.Fail {
				op.Token = fmt.Sprintf("t%d", tok) // a lost acquire still had its token
			}
			op.Type = history.Info
			switch r.IntN(3) {
			case 0: // it gave up before Redis applied it, within the horizon
				hz := int64(h.horizon / time.Millisecond)
				op.Return = max(cl.call, inst-r.Int64N(hz+1)) * ms
			case 1: // answered, but not with the outcome: applied by its return
				op.Answered = true
			}
		}
		next(cl, cl.ret)
		op.Index = int64(len(h.ops))
		h.ops = append(h.ops, op)
	}
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

// mutate changes h in one or two ways a broken lock, or a broken history,
// would: a lease stretched or cut, an op moved, made slow or info, tokens
// swapped, an outcome flipped, an extend's mode flipped.
func mutate(r *rand.Rand, h oracleHistory) oracleHistory {
	const ms = int64(time.Millisecond)
	h.ops = slices.Clone(h.ops)
	var what []string
	for k := 0; k < 1+r.IntN(2); k++ {
		i := r.IntN(len(h.ops))
		op := &h.ops[i]
		switch r.IntN(8) {
		case 0:
			if op.TTLms > 0 {
				op.TTLms = max(1, op.TTLms*int64(1+r.IntN(3))/int64(1+r.IntN(3)))
				what = append(what, fmt.Sprintf("#%d ttl %dms", i, op.TTLms))
			}
		case 1:
			d := (r.Int64N(41) - 20) * ms
			op.Call, op.Return = max(0, op.Call+d), max(0, op.Return+d)
			what = append(what, fmt.Sprintf("#%d moved %dms", i, d/ms))
		case 2:
			op.Call = max(0, op.Call-r.Int64N(20)*ms)
			op.Return += r.Int64N(20) * ms
			what = append(what, fmt.Sprintf("#%d slow", i))
		case 3:
			op.Type, op.Answered = history.Info, r.IntN(2) == 0 && op.F != history.Write
			what = append(what, fmt.Sprintf("#%d info (answered %v)", i, op.Answered))
		case 4:
			j := r.IntN(len(h.ops))
			if op.Token != "" && h.ops[j].Token != "" {
				op.Token, h.ops[j].Token = h.ops[j].Token, op.Token
				what = append(what, fmt.Sprintf("#%d and #%d tokens swapped", i, j))
			}
		case 5:
			switch op.Type {
			case history.OK:
				op.Type = history.Fail
			case history.Fail:
				op.Type = history.OK
				if op.F == history.Acquire && op.Token == "" {
					// An ok acquire carries its token (the reader
					// refuses one without): the model would read ""
					// as no holder at all.
					op.Token = fmt.Sprintf("made-ok-%d", i)
				}
			}
			what = append(what, fmt.Sprintf("#%d outcome %s", i, op.Type))
		case 6:
			if op.F == history.Extend {
				op.Mode = map[string]string{"": history.ExtendAdd, history.ExtendAdd: ""}[op.Mode]
				what = append(what, fmt.Sprintf("#%d mode %q", i, op.Mode))
			}
		case 7:
			if op.F == history.Acquire && op.Type == history.Fail {
				op.Type, op.Token = history.OK, "thief"
				what = append(what, fmt.Sprintf("#%d stolen", i))
			}
		}
	}
	h.label = "mutated: " + strings.Join(what, ", ")
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

var oracleCases = flag.Int("oracle.cases", 5000, "seeded histories TestLinearizable_AgreesWithOracle compares")

// TestLinearizable_AgreesWithOracle compares the checker, with every
// reduction, with each turned off and with none, against the oracle on
// seeded random histories (a simulated correct lock, and mutations of
// it), and fails on the first disagreement, printing the history. A
// correct lock's histories must all be valid, and the mutations must give
// both verdicts often, or the comparison would prove little.
func TestLinearizable_AgreesWithOracle(t *testing.T) {
	n := *oracleCases
	if testing.Short() {
		n = 500
	}
	verdicts := map[Verdict]int{}
	split := map[Verdict]int{} // mutations that cuts splits, by verdict
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 13))
		h := simKey(r, 2+r.IntN(7))
		if v := agree(t, h); v != Valid {
			t.Fatalf("seed %d: the simulated correct lock is %s by the oracle:\n%s", seed, v, h)
		}
		m := mutate(r, h)
		v := agree(t, m)
		verdicts[v]++
		ptrs := make([]*history.Op, len(m.ops))
		for i := range m.ops {
			ptrs[i] = &m.ops[i]
		}
		if len(cuts(toLockOps(ptrs, int64(m.horizon)))) > 1 {
			split[v]++
		}
	}
	t.Logf("%d histories, %d mutations: %d valid, %d invalid; split by cuts: %d valid, %d invalid", n, n, verdicts[Valid], verdicts[Invalid], split[Valid], split[Invalid])
	// The cuts must meet both verdicts often, or "all reductions" would
	// not be testing them.
	if split[Valid] < n/40 || split[Invalid] < n/40 {
		t.Errorf("cuts split %d valid and %d invalid mutations of %d: too few to test the split", split[Valid], split[Invalid], n)
	}
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("mutations gave %d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
}

// FuzzLinearizable_AgreesWithOracle decodes up to 8 ops from the input,
// some with a clock_bound, and compares the checker with the oracle.
func FuzzLinearizable_AgreesWithOracle(f *testing.F) {
	f.Add([]byte{3, 0, 0, 1, 0, 5, 10, 1, 1, 2, 3, 4, 10, 2, 0, 1, 9, 1, 0})
	f.Add([]byte{5, 0, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ok := decodeOracleHistory(data)
		if !ok || looseIn(h) {
			return
		}
		agree(t, h)
	})
}

// decodeOracleHistory reads eps, horizon and up to 8 ops of 6 bytes each.
func decodeOracleHistory(data []byte) (oracleHistory, bool) {
	const ms = int64(time.Millisecond)
	if len(data) < 3+6 {
		return oracleHistory{}, false
	}
	h := oracleHistory{eps: time.Duration(data[0]%5) * time.Millisecond,
		horizon: time.Duration(data[1]%40) * time.Millisecond, label: "fuzzed"}
	data = data[2:]
	for len(data) >= 6 && len(h.ops) < 8 {
		b := data[:6]
		data = data[6:]
		op := history.Op{Index: int64(len(h.ops)), Process: int(b[0] % 3), Key: "k",
			Token: fmt.Sprintf("t%d", b[1]%4), Call: int64(b[2]%60) * ms}
		op.Return = op.Call + int64(b[3]%12)*ms
		op.F = []history.Func{history.Acquire, history.Acquire, history.Release, history.Extend}[b[0]/3%4]
		op.Type = []history.Type{history.OK, history.Fail, history.Info}[b[1]/4%3]
		if op.F != history.Release {
			op.TTLms = 1 + int64(b[4]%30)
		}
		if op.F == history.Extend && b[5]%2 == 1 {
			op.Mode = history.ExtendAdd
		}
		op.ClockBound = int64(b[5]/2%4) * ms // recorded on another machine's clock
		op.Answered = op.Type == history.Info && b[5]/8%2 == 1
		h.ops = append(h.ops, op)
	}
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h, true
}

// TestInstants_AreATimeline: the concrete instants picked for porcupine's
// linearization of a key (without its failed acquires) satisfy every rule
// with numbers, on simulated histories and their mutations, so witnesses
// do not fall back for want of a timeline.
func TestInstants_AreATimeline(t *testing.T) {
	checked := 0
	for seed := 0; seed < 2000; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 29))
		h := simKey(r, 2+r.IntN(7))
		if seed%2 == 1 {
			h = mutate(r, h)
		}
		var ptrs []*history.Op
		for i := range h.ops {
			if !(h.ops[i].F == history.Acquire && h.ops[i].Type == history.Fail) {
				ptrs = append(ptrs, &h.ops[i])
			}
		}
		lops := toLockOps(ptrs, int64(h.horizon))
		m := leaseModel{eps: int64(h.eps)}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		kc := keyCheck{ctx: ctx, m: m, pm: m.porcupine()}
		res, lin := kc.linearization(lops, true)
		cancel()
		if res != porcupine.Ok || lin == nil {
			continue
		}
		path, ok := m.replay(lops, lin)
		if !ok {
			t.Fatalf("seed %d: porcupine's linearization does not replay:\n%s", seed, h)
		}
		ti, s := m.instants(path)
		if !m.concrete(path, ti, s) {
			t.Fatalf("seed %d: instants %v (lease set at %v) are not a timeline of %v:\n%s", seed, ti, s, lin, h)
		}
		checked++
	}
	if checked < 1000 {
		t.Errorf("only %d of 2000 histories had a linearization to check", checked)
	}
}

// simStall simulates a correct lease lock on one key through a stall, as
// a paused Redis makes one: a lease may be live when it begins; groups of
// clients send acquires that time out (orphan info acquires, 5 to 40 of
// them, the same interval within a group); their SET NXs run when Redis
// resumes, where one wins if the key is free; clients whose acquires
// follow fail while that lease lives, and one acquires after it.
func simStall(r *rand.Rand) oracleHistory {
	const ms = int64(time.Millisecond)
	h := oracleHistory{eps: time.Duration(r.Int64N(4)) * time.Millisecond,
		horizon: time.Duration(10+r.Int64N(30)) * time.Millisecond, label: "simulated stall"}
	eps, hz := int64(h.eps/time.Millisecond), int64(h.horizon/time.Millisecond)
	ttl := 10 + r.Int64N(20)
	var holder string
	var expiry int64
	add := func(p int, f history.Func, typ history.Type, tok string, call, ret int64) {
		op := history.Op{Process: p, Key: "k", F: f, Type: typ, Token: tok, Call: call * ms, Return: ret * ms}
		if f != history.Release {
			op.TTLms = ttl
		}
		h.ops = append(h.ops, op)
	}
	start := r.Int64N(10)
	if r.IntN(2) == 0 { // a lease before the stall; its release may be stuck in it
		holder, expiry = "t0", 1+ttl
		add(0, history.Acquire, history.OK, "t0", 0, 2)
		if r.IntN(2) == 0 {
			add(0, history.Release, history.Info, "t0", start+1, start+4)
		} else {
			holder = ""
			add(0, history.Release, history.OK, "t0", 3, 4)
			start += 5
		}
	}
	groups := 1 + r.IntN(2)
	n := 5 + r.IntN(36)
	resume := int64(inf)
	for g := 0; g < groups; g++ {
		call := start + r.Int64N(5)
		ret := call + r.Int64N(6)
		resume = min(resume, ret+hz)
		for i := 0; i < n/groups; i++ {
			add(1+g, history.Acquire, history.Info, fmt.Sprintf("o%d.%d", g, i), call, ret)
		}
	}
	resume = max(start+5, resume-r.Int64N(hz+1)) // every group was called by start+5
	if holder != "" && resume >= expiry {
		holder = ""
	}
	if holder == "" {
		holder, expiry = "o0.0", resume+ttl // the winner's name does not matter
	}
	for c := 0; c < 1+r.IntN(4); c++ { // clients refused while that lease lives
		at := resume + r.Int64N(max(1, expiry-resume-eps))
		add(10+c, history.Acquire, history.Fail, "", max(0, at-r.Int64N(3)), at+r.Int64N(3))
	}
	at := expiry + eps + r.Int64N(5) // the next holder
	add(20, history.Acquire, history.OK, "t1", at-r.Int64N(2), at+r.Int64N(2))
	add(20, history.Release, history.OK, "t1", at+3, at+5)
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

// stallModes are the checker's modes that stay tractable with dozens of
// orphans: all but those that leave porcupine every orphan to order.
var stallModes = []string{"all reductions", "no dominated-drop", "no expiredFail", "no witness", "no orphan-drop", "no cuts", "no uncovered-fail", "no cover", "no edf order", "no certain overlap", "no orphan shortfall", "no orphan narrowing"}

// TestLinearizable_AgreesWithOracle_Stalls compares the checker with the
// oracle on histories with 5 to 40 interchangeable orphan info acquires
// on one key (simStall, and mutations of it): every simulated one valid,
// the mutations both ways.
func TestLinearizable_AgreesWithOracle_Stalls(t *testing.T) {
	n := *oracleCases / 10
	verdicts := map[Verdict]int{}
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		h := simStall(r)
		if v := agreeIn(t, h, stallModes); v != Valid {
			t.Fatalf("seed %d: the simulated stall is %s by the oracle:\n%s", seed, v, h)
		}
		m := mutate(r, h)
		if seed%2 == 1 {
			m = moveFail(r, h)
		}
		verdicts[agreeIn(t, m, stallModes)]++
	}
	t.Logf("%d stalls, %d mutations: %d valid, %d invalid", n, n, verdicts[Valid], verdicts[Invalid])
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("mutations gave %d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
}

// moveFail moves one failed acquire of h by up to 60 ms either way: into
// or out of the leases that could cover it.
func moveFail(r *rand.Rand, h oracleHistory) oracleHistory {
	h.ops = slices.Clone(h.ops)
	var fails []int
	for i, op := range h.ops {
		if op.F == history.Acquire && op.Type == history.Fail {
			fails = append(fails, i)
		}
	}
	i := fails[r.IntN(len(fails))]
	d := (r.Int64N(121) - 60) * int64(time.Millisecond)
	op := &h.ops[i]
	d = max(d, -op.Call)
	op.Call, op.Return = op.Call+d, op.Return+d
	h.label = fmt.Sprintf("mutated: #%d fail moved %v", i, time.Duration(d))
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

// blur records h's ops as agents on other machines would: each op's
// times shifted by its agent's clock error, which its clock_bound covers
// (|error| <= bound, the bound at most a quarter of the key's shortest
// TTL, so that the key is judged). The history is the same correct one,
// seen through loose clocks.
func blur(r *rand.Rand, h oracleHistory) oracleHistory {
	const ms = int64(time.Millisecond)
	minTTL := int64(1 << 62)
	for _, op := range h.ops {
		if op.TTLms > 0 {
			minTTL = min(minTTL, op.TTLms*ms)
		}
	}
	agents := make([]struct{ bound, err int64 }, 3)
	for a := range agents {
		// Often the worst error its bound allows, either way.
		agents[a].bound = minTTL/8 + r.Int64N(minTTL/8+1)
		agents[a].err = r.Int64N(2*agents[a].bound+1) - agents[a].bound
		if r.IntN(2) == 0 {
			agents[a].err = agents[a].bound * int64(1-2*r.IntN(2))
		}
	}
	h.ops = slices.Clone(h.ops)
	for i := range h.ops {
		op := &h.ops[i]
		ag := agents[op.Process%len(agents)]
		d := max(ag.err, -op.Call)
		op.Call, op.Return, op.ClockBound = op.Call+d, op.Return+d, ag.bound
	}
	h.label += ", blurred by agents' clocks"
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

// TestLinearizable_AgreesWithOracle_ClockBounds: histories whose ops were
// recorded on other machines' clocks, each op's times off by up to its
// clock_bound (a simulated correct lock seen through loose clocks, and
// mutations of it), get the oracle's verdict in every checker mode. The
// correct lock stays valid; without its bounds the same history is often
// invalid (the bounds are what keeps a false alarm away), and the
// mutations give both verdicts.
func TestLinearizable_AgreesWithOracle_ClockBounds(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	verdicts := map[Verdict]int{}
	needed := 0
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 29))
		h := blur(r, simKey(r, 2+r.IntN(7)))
		if v := agree(t, h); v != Valid {
			t.Fatalf("seed %d: the blurred correct lock is %s by the oracle:\n%s", seed, v, h)
		}
		bare := oracleHistory{eps: h.eps, horizon: h.horizon, label: "without bounds", ops: slices.Clone(h.ops)}
		for i := range bare.ops {
			bare.ops[i].ClockBound = 0
		}
		if bare.oracleSays() == Invalid {
			needed++
		}
		m := mutate(r, h)
		if looseIn(m) {
			// A mutation that shrank a TTL under four bounds: the key is
			// not judged, whatever the oracle would say.
			if res := Linearizable(context.Background(), m.ops, Options{ClockTolerance: Exactly(m.eps), InfoHorizon: Exactly(m.horizon)}.Resolved()); res.Verdict != Unknown {
				t.Fatalf("seed %d: clocks too loose for a TTL, checker says %s, want unknown\n%s", seed, res.Verdict, m)
			}
			verdicts[Unknown]++
			continue
		}
		verdicts[agree(t, m)]++
	}
	t.Logf("%d blurred histories (%d invalid without their bounds); mutations: %d valid, %d invalid, %d too loose to judge", n, needed, verdicts[Valid], verdicts[Invalid], verdicts[Unknown])
	if needed < n/40 {
		t.Errorf("only %d of %d blurred histories needed their bounds: the test proves little", needed, n)
	}
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("mutations gave %d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
}

// looseIn says whether some op of h has a clock_bound over a quarter of
// the shortest TTL (the key is then not judged).
func looseIn(h oracleHistory) bool {
	var bound, ttl int64
	for _, op := range h.ops {
		bound = max(bound, op.ClockBound)
		if op.TTLms > 0 && (ttl == 0 || op.TTLms*int64(time.Millisecond) < ttl) {
			ttl = op.TTLms * int64(time.Millisecond)
		}
	}
	return float64(bound) > MaxBoundOfTTL*float64(ttl)
}

// TestClockBound_MutexAndLoose: mutex reports two writes from agents'
// clocks as double holders only where they overlap for certain; a key
// whose bounds exceed a quarter of its TTL is unknown, saying the clocks
// are too loose, never valid nor invalid.
func TestClockBound_MutexAndLoose(t *testing.T) {
	const ms = int64(time.Millisecond)
	w := func(p int, tok string, call, ret, bound int64) history.Op {
		return history.Op{Process: p, F: history.Write, Type: history.OK, Key: "k", Token: tok, Call: call * ms, Return: ret * ms, ClockBound: bound * ms}
	}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"overlap 4ms, bounds 1ms each", []history.Op{w(1, "a", 0, 10, 1), w(2, "b", 6, 20, 1)}, 1},
		{"overlap 4ms, bounds 2ms each", []history.Op{w(1, "a", 0, 10, 2), w(2, "b", 6, 20, 2)}, 0},
		{"overlap 4ms, one bound 3ms", []history.Op{w(1, "a", 0, 10, 0), w(2, "b", 6, 20, 3)}, 1},
		{"overlap 4ms, one bound 4ms", []history.Op{w(1, "a", 0, 10, 0), w(2, "b", 6, 20, 4)}, 0},
		{"no bounds", []history.Op{w(1, "a", 0, 10, 0), w(2, "b", 6, 20, 0)}, 1},
		{"a write shorter than its bounds", []history.Op{w(1, "a", 0, 30, 0), w(2, "b", 10, 14, 2)}, 0},
	} {
		if got := Mutex(tc.ops).ViolationCount; got != tc.want {
			t.Errorf("%s: %d double holders, want %d", tc.name, got, tc.want)
		}
	}
	acq := func(p int, tok string, typ history.Type, call, ret, bound int64) history.Op {
		return history.Op{Process: p, F: history.Acquire, Type: typ, Key: "k", Token: tok, TTLms: 20, Call: call * ms, Return: ret * ms, ClockBound: bound * ms}
	}
	// Two holders at once: invalid with tight clocks, unknown with loose.
	two := []history.Op{acq(1, "a", history.OK, 0, 1, 1), acq(2, "b", history.OK, 5, 6, 1)}
	tight := Options{ClockTolerance: None}.Resolved()
	if r := Linearizable(context.Background(), two, tight); r.Verdict != Invalid {
		t.Errorf("two holders, bounds 1ms of a 20ms TTL: %s, want invalid", r.Verdict)
	}
	two[1].ClockBound = 6 * ms
	r := Linearizable(context.Background(), two, tight)
	if r.Verdict != Unknown || len(r.Undecided) != 1 || r.Undecided[0].Reason != LooseClock || !strings.Contains(r.Note, "clocks too loose") {
		t.Errorf("bound 6ms of a 20ms TTL: %s %+v %q, want unknown for loose clocks", r.Verdict, r.Undecided, r.Note)
	}
}

// widen makes some of h's ops slow: each, with even odds, has its
// interval stretched by up to 300 ms either side (ten times the longest
// TTL simKey draws), as a starved client's or a slow lock process's ops
// are. An op's instant stays inside its interval, so a valid history stays
// valid.
func widen(r *rand.Rand, h oracleHistory) oracleHistory {
	const spread = 300 * int64(time.Millisecond)
	h.ops = slices.Clone(h.ops)
	for i := range h.ops {
		if r.IntN(2) == 0 {
			h.ops[i].Call = max(0, h.ops[i].Call-r.Int64N(spread))
			h.ops[i].Return += r.Int64N(spread)
		}
	}
	h.label += ", slow ops"
	return h
}

// TestLinearizable_AgreesWithOracle_SlowOps compares the checker with the
// oracle on histories whose ops reach up to ten TTLs either side (simKey
// widened), and on mutations of them (among them leases stretched or
// stolen, which certainOverlap must refute where it can): every widened
// correct history valid, the mutations both ways, in every mode; and the
// two reductions for slow ops do their part (edfOrder finds the witness's
// order, certainOverlap refutes).
func TestLinearizable_AgreesWithOracle_SlowOps(t *testing.T) {
	n := *oracleCases / 5
	verdicts := map[Verdict]int{}
	var edf, overlaps int
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 47))
		base := simKey(r, 2+r.IntN(7))
		h := widen(r, base)
		if v := agree(t, h); v != Valid {
			t.Fatalf("seed %d: the widened correct lock is %s by the oracle:\n%s", seed, v, h)
		}
		// A broken lock's slow history: its ops widened, or widened first.
		m := mutate(r, h)
		if seed%2 == 1 {
			m = widen(r, mutate(r, base))
		}
		v := agree(t, m)
		verdicts[v]++
		lops := h.lockOps()
		switch lin, exhausted := (leaseModel{eps: int64(h.eps)}).edfOrder(context.Background(), lops, edfSteps(len(lops))); {
		case lin != nil:
			edf++
		case exhausted:
			t.Fatalf("seed %d: edfOrder searched every order of a valid history and found none:\n%s", seed, h)
		}
		// Run to its end, edfOrder refutes (up to its hashes): only a
		// history the oracle finds invalid.
		mops := m.lockOps()
		if lin, exhausted := (leaseModel{eps: int64(m.eps)}).edfOrder(context.Background(), mops, edfSteps(len(mops))); exhausted && v != Invalid || lin != nil && v == Invalid {
			t.Fatalf("seed %d: edfOrder (order found %v, searched to the end %v) disagrees with the oracle, %s:\n%s", seed, lin != nil, exhausted, v, m)
		}
		if y, _ := certainOverlap(leaseModel{eps: int64(m.eps)}, m.lockOps()); y != nil {
			if v != Invalid {
				t.Fatalf("seed %d: certainOverlap refutes a history the oracle finds %s:\n%s", seed, v, m)
			}
			overlaps++
		}
	}
	t.Logf("%d widened histories (edfOrder ordered %d whole), %d mutations: %d valid, %d invalid (%d refuted by certainOverlap)",
		n, edf, n, verdicts[Valid], verdicts[Invalid], overlaps)
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("mutations gave %d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], n)
	}
	if edf < n/2 || overlaps < n/200 {
		t.Errorf("edfOrder ordered %d of %d correct histories, certainOverlap refuted %d mutations: too few to test them", edf, n, overlaps)
	}
}

// TestLinearizable_AgreesWithOracle_SlowInfo: the slow ops of
// TestLinearizable_AgreesWithOracle_SlowOps mixed with indeterminate
// ones at tolerance 0 and a short info horizon (the shape of issue 52,
// whose check ran out of memory: infoSlow), and mutations of them: the
// checker agrees with the oracle in every mode, both verdicts reached.
func TestLinearizable_AgreesWithOracle_SlowInfo(t *testing.T) {
	n := *oracleCases / 5
	verdicts := map[Verdict]int{}
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 53))
		h := widen(r, simKey(r, 2+r.IntN(7)))
		verdicts[agree(t, infoSlow(r, h))]++
		verdicts[agree(t, infoSlow(r, mutate(r, h)))]++
	}
	t.Logf("%d histories and as many mutations: %d valid, %d invalid", n, verdicts[Valid], verdicts[Invalid])
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 {
		t.Errorf("%d valid and %d invalid of %d: too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], 2*n)
	}
}

// infoSlow makes one in eight of h's ok acquires, releases and extends
// indeterminate, each given up a third of the way to its recorded
// return, at tolerance 0 and a 20 ms horizon: ops that may take effect
// after their client gave up, on a clock judged exactly.
func infoSlow(r *rand.Rand, h oracleHistory) oracleHistory {
	h.ops = slices.Clone(h.ops)
	for i := range h.ops {
		if op := &h.ops[i]; op.Type == history.OK && op.F != history.Write && r.IntN(8) == 0 {
			op.Type, op.Return = history.Info, op.Call+(op.Return-op.Call)/3
		}
	}
	h.eps, h.horizon = 0, 20*time.Millisecond
	h.label += ", one in eight indeterminate, tolerance 0"
	return h
}

// lockOps is h's ops as the model takes them.
func (h oracleHistory) lockOps() []*lockOp {
	ptrs := make([]*history.Op, len(h.ops))
	for i := range h.ops {
		ptrs[i] = &h.ops[i]
	}
	return toLockOps(ptrs, int64(h.horizon))
}

// simStalls is a key behind a Redis that stalls again and again (1 to 3
// stalls): each leaves a class of interchangeable orphans (1 to 4, or in
// every other history 1 to 13 and 5 to 40 in all; their own interval and
// TTL, as clients with different settings send them),
// and refusals follow over a span that those orphans' leases, one after
// another, may or may not be able to cover; a lease kept alive by an
// extend caught in the first stall may come before. Whether it is valid
// is the oracle's to say: both verdicts come out.
func simStalls(r *rand.Rand) oracleHistory {
	const ms = int64(time.Millisecond)
	h := oracleHistory{eps: time.Duration(r.Int64N(4)) * time.Millisecond,
		horizon: time.Duration(10+r.Int64N(40)) * time.Millisecond, label: "simulated stalls"}
	hz := int64(h.horizon / time.Millisecond)
	add := func(p int, f history.Func, typ history.Type, tok string, ttl, call, ret int64) {
		op := history.Op{Process: p, Key: "k", F: f, Type: typ, Token: tok, Call: call * ms, Return: ret * ms}
		if f != history.Release {
			op.TTLms = ttl
		}
		h.ops = append(h.ops, op)
	}
	at := int64(0)
	if r.IntN(2) == 0 { // a lease whose last extend is caught in the first stall
		add(0, history.Acquire, history.OK, "t0", 15, 0, 1)
		add(0, history.Extend, history.OK, "t0", 15, 5, 6)
		add(0, history.Extend, history.Info, "t0", 15, 12, 13+r.Int64N(10))
		at = 12
	}
	end, first := at, int64(-1)
	// Every other history is a large one: 5 to 40 orphans in all, whose
	// leases are longer (so that the oracle still ends); the small ones
	// (1 to 4 a stall) are where refusals outnumber what orphans can cover.
	large := r.IntN(2) == 0
	counts := make([]int, 1+r.IntN(3))
	for g := range counts {
		counts[g] = 1 + r.IntN(4)
		if large {
			counts[g] = 1 + r.IntN(13)
		}
	}
	if total := sumInts(counts); large && total < 5 {
		counts[0] += 5 - total
	}
	for g, n := range counts {
		call := at + r.Int64N(10)
		ret := call + r.Int64N(8)
		ttl := 5 + r.Int64N(20)
		if large {
			ttl += 3
		}
		if first < 0 {
			first = call
		}
		for i := range n {
			add(1+g, history.Acquire, history.Info, fmt.Sprintf("o%d.%d", g, i), ttl, call, ret)
		}
		end = max(end, ret+hz+ttl)
		at = ret + r.Int64N(hz+1)
	}
	// Refusals over the span the orphans could cover, more or fewer than
	// their leases can cover together; now and then one past it.
	for c := range 3 + r.IntN(6) {
		f := first + r.Int64N(end-first+1)
		if r.IntN(8) == 0 {
			f = r.Int64N(end + 20)
		}
		add(10+c, history.Acquire, history.Fail, "", 15, f, f+r.Int64N(3))
	}
	slices.SortStableFunc(h.ops, func(a, b history.Op) int { return cmpInt(a.Return, b.Return) })
	for i := range h.ops {
		h.ops[i].Index = int64(i)
	}
	return h
}

// TestLinearizable_AgreesWithOracle_RepeatedStalls compares the checker
// with the oracle on keys behind repeated stalls (simStalls): orphans that
// differ in interval and TTL from stall to stall, refusals under them, a
// lease stretched by an extend caught in a stall; both verdicts, in the
// modes that stay tractable with orphans; and orphanShortfall refutes
// some of the invalid ones and no valid one.
func TestLinearizable_AgreesWithOracle_RepeatedStalls(t *testing.T) {
	n := *oracleCases / 10
	verdicts, large, most := map[Verdict]int{}, map[Verdict]int{}, 0
	shortfalls := 0
	for seed := 0; seed < n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 61))
		h := simStalls(r)
		v := agreeIn(t, h, stallModes)
		verdicts[v]++
		if orphans := countOrphans(h); orphans >= 5 {
			large[v]++
			most = max(most, orphans)
		}
		m := leaseModel{eps: int64(h.eps)}
		if f, _, _ := orphanShortfall(m, h.lockOps()); f != nil {
			if v != Invalid {
				t.Fatalf("seed %d: orphanShortfall refutes a history the oracle finds %s:\n%s", seed, v, h)
			}
			// Those whose every refusal some lease could cover on its
			// own: the case it exists for.
			if uncoveredFail(m, h.lockOps()) == nil {
				shortfalls++
			}
		}
	}
	t.Logf("%d repeated stalls: %d valid, %d invalid (%d refuted by orphanShortfall where every refusal alone has a possible holder); with 5 to %d orphans: %d valid, %d invalid", n, verdicts[Valid], verdicts[Invalid], shortfalls, most, large[Valid], large[Invalid])
	if verdicts[Valid] < n/10 || verdicts[Invalid] < n/10 || shortfalls < n/100 || large[Valid] < n/10 || large[Invalid] < n/50 || most < 30 {
		t.Errorf("%d valid, %d invalid, %d shortfalls of %d (5 or more orphans: %d valid, %d invalid, at most %d): too one-sided to prove anything", verdicts[Valid], verdicts[Invalid], shortfalls, n, large[Valid], large[Invalid], most)
	}
}

// countOrphans is the number of h's info acquires.
func countOrphans(h oracleHistory) int {
	n := 0
	for _, o := range h.ops {
		if o.F == history.Acquire && o.Type == history.Info {
			n++
		}
	}
	return n
}

func sumInts(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
