package checker

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockcheck/lockcheck/history"
)

// The shapes beyond the mutex (DESIGN "Shapes beyond the mutex") share
// the mutex's timeline: every op that took effect did so at one instant t
// in its interval (info ops: up to return + horizon, or never), instants
// non-decreasing in linearization order, and each lease has a true end X
// in [E - eps, E + eps], E its setter's instant plus its TTL (plus the
// TTLs additive extends added). A lease is held at t iff it was granted
// before t, t <= X, and not released; bounds are closed, as the mutex
// model reads its table (at t = X the lease may be held or gone, and once
// gone it stays gone).
//
// A shape is its table: which ops are legal at an instant, given exactly
// which leases are held then (shape.legal, deterministic). Everything
// else is this file's, shared by every shape: which leases had ended
// (nondeterministic), whether an info op took effect, and the constraints
// on the instants.
//
// A state is the set S of leases possibly held, and a difference-bound
// matrix over the origin, l (the instant of the last op) and one set
// instant s_j per lease of S, kept closed; lease j's E is s_j + d_j. As
// for the mutex (model.go), only these quantities appear in a later op's
// constraints, every constraint is a difference bound, and projecting a
// variable out of a closed DBM (its sub-matrix) is exact: so the states
// after a sequence of ops are exactly its feasible timelines.
//
// l is kept bounded below only (lastUnbounded): a state admits l at the
// last op's instant or anywhere later. A later op reads l only as t >= l,
// so a timeline whose l lies later admits only later ops a timeline with
// l at the instant admits too, and the states' verdicts are the same;
// while two states that differ only in which of two read grants came
// last (l = s_a >= s_b, or l = s_b >= s_a) become two of one hull.
//
// Which leases are held at t is decided lazily. The legal held sets H of
// S for an op are a boolean function of |S| variables; the step takes
// implicants covering exactly its true sets (the primes, by Quine-McCluskey,
// for a few leases; the shape's own beyond): each fixes some leases held
// (t - s_j <= d_j + eps), some gone (s_j - t <= eps - d_j, and removed
// from S: gone at t, gone ever after) and leaves the rest undecided, kept
// in S unconstrained. That is exact: the legal sets are exactly the union
// of the implicants' ranges, and a lease kept undecided admits exactly
// the timelines of both its branches (the X a timeline picks for it later
// decides, and any held set in the range is legal). A grant that needs
// some leases gone thus forks one state per lease it could have been; a
// release or a refusal decides only its own lease. A token names one
// lease: a grant needs its token's earlier lease, if any, gone.
//
// A lease certainly gone at l (l - s_j > d_j + eps in every solution) is
// dropped: no later op can find it held, and an op that needs it gone
// finds that already true, so dropping it changes no verdict.

// shape is one lock shape's table at an instant.
type shape interface {
	// legal says whether op, taking effect as ok (ok) or as a definite
	// failure at an instant where exactly held are held, is legal; busy
	// says a write acquire of the key is in flight then. Of a lease it
	// may read only whether it is op's (its token) and a write lease: the
	// model caches its answers by those (primeCache).
	legal(held []permitLease, op *permitOp, ok, busy bool) bool
	String() string
}

// permitOp is the shapes' input: one acquire, release or extend.
type permitOp struct {
	index   int64
	process int
	f       history.Func
	typ     history.Type
	token   string
	ttl     int64 // ns
	add     bool  // an additive extend
	write   bool  // a write acquire (read-write lock)
	call    int64
	// ret is the latest instant the op may take effect (info ops:
	// return + horizon); orig its recorded return.
	ret, orig int64
	// busy, on a definite read acquire fail under writer preference, are
	// the spans of [call, ret] where a write acquire was in flight.
	busy [][2]int64
}

// permitLease is one lease of S: E = s + d.
type permitLease struct {
	token string
	write bool
	d     int64
}

// permitState is one state: leases sorted by token, and b the closed DBM
// over (0, l, s_1, ..., s_n), row-major.
type permitState struct {
	leases []permitLease
	b      []int64
	// sig is leaseSig(leases), set where leases are: states of other
	// leases are told apart by it before their leases are compared.
	sig uint64
}

// Variables of a permit state's matrix: the leases' set instants follow.
const (
	pZero = iota
	pLast
	pFirst
)

func (s *permitState) size() int { return len(s.leases) + pFirst }

func (s *permitState) at(i, j int) int64 { return s.b[i*s.size()+j] }

func initialPermits() permitState {
	return permitState{b: []int64{0, inf, inf, 0}}
}

// permitModel is the shared wrapper: a shape, with clock tolerance eps.
type permitModel struct {
	sh     shape
	eps    int64
	primes *primeCache
}

func newPermitModel(sh shape, eps int64) permitModel {
	return permitModel{sh: sh, eps: eps, primes: &primeCache{}}
}

// primeCache keeps the implicants of each table the model has met: a
// table is the shape's answers for one op kind over n leases, and it
// depends on the leases only through which are the op's and which are
// write leases (shape.legal). tooMany is set once a state had more leases possibly held than a cube
// has bits (or than enumerating allows, for a shape without its own
// implicants): the step then finds no state, and checkPermits says
// unknown, never invalid.
type primeCache struct {
	m       sync.Map
	tooMany atomic.Bool
}

type tableKey struct {
	n               int
	f               history.Func
	ok, busy, write bool
	mine, writes    uint64
}

// window is a span the op's instant is confined to, and whether a write
// acquire is in flight all through it.
type window struct {
	from, to int64
	busy     bool
}

// windows are where op may take effect: its interval, and, for a read
// refusal under writer preference, each span a writer was in flight.
func (op *permitOp) windows() []window {
	w := []window{{op.call, op.ret, false}}
	for _, b := range op.busy {
		w = append(w, window{b[0], b[1], true})
	}
	return w
}

// step returns every state op can lead to from s; none if it is illegal.
// An info op took effect as ok or never (as a failure it would only add
// constraints, or drop its own lease, which a state keeping it undecided
// admits too).
func (m permitModel) step(s permitState, op *permitOp) []permitState {
	if op.typ != history.Info {
		return m.apply(s, op, op.typ == history.OK)
	}
	return append([]permitState{s}, m.apply(s, op, true)...)
}

// apply returns the states after op took effect in s as ok (ok) or as a
// definite failure.
func (m permitModel) apply(s permitState, op *permitOp, ok bool) []permitState {
	var out []permitState
	for _, w := range op.windows() {
		for _, c := range m.implicants(s.leases, op, ok, w.busy) {
			if n, feasible := m.decide(s, op, ok, w, c); feasible {
				out = append(out, n)
			}
		}
	}
	return out
}

// implicants are implicants of op's table over leases: the legal held
// sets are exactly the union of their ranges. Up to enumerateUpTo leases
// they are the table's primes, found by enumerating every held set;
// beyond, the shape's own (implicantShape), which the tests prove against
// the enumeration.
func (m permitModel) implicants(leases []permitLease, op *permitOp, ok, busy bool) []cube {
	mine := tokenMask(leases, op.token)
	k := tableKey{n: len(leases), f: op.f, ok: ok, busy: busy, write: op.write, mine: mine}
	for j, l := range leases {
		if l.write {
			k.writes |= 1 << j
		}
	}
	if c, hit := m.primes.m.Load(k); hit {
		return c.([]cube)
	}
	// A token names one lease: its grant needs its earlier one gone.
	grant := ok && op.f == history.Acquire
	d, direct := m.sh.(implicantShape)
	if len(leases) > 64 || !direct && len(leases) > 20 {
		m.primes.tooMany.Store(true)
		return nil
	}
	var c []cube
	if direct && len(leases) > enumerateUpTo {
		for _, x := range d.implicants(leases, op, ok, busy) {
			if !grant || x.val&mine == 0 {
				c = append(c, cube{x.val, x.care | btoiMask(grant, mine)})
			}
		}
	} else {
		c = primeImplicants(len(leases), func(mask uint64) bool {
			return !(grant && mask&mine != 0) && m.sh.legal(heldBy(leases, mask), op, ok, busy)
		})
	}
	m.primes.m.Store(k, c)
	return c
}

// enumerateUpTo is the most leases whose held sets implicants enumerates
// (a variable: tests set it to 0, to run the shapes' own implicants).
var enumerateUpTo = 6

// implicantShape is a shape that states implicants of its table itself
// (shape.legal's), for sets of leases too many to enumerate.
type implicantShape interface {
	implicants(leases []permitLease, op *permitOp, ok, busy bool) []cube
}

func btoiMask(b bool, mask uint64) uint64 {
	if b {
		return mask
	}
	return 0
}

// choose is every cube that fixes r of n leases, held (held) or gone, and
// leaves the others undecided; one leaving all undecided if r <= 0.
func choose(n, r int, held bool) []cube {
	if r <= 0 {
		return []cube{{}}
	}
	var out []cube
	var rec func(from int, c cube, left int)
	rec = func(from int, c cube, left int) {
		if left == 0 {
			out = append(out, c)
			return
		}
		for j := from; j <= n-left; j++ {
			bit := uint64(1) << j
			rec(j+1, cube{c.val | btoiMask(held, bit), c.care | bit}, left-1)
		}
	}
	rec(0, cube{}, r)
	return out
}

// perLeaseImplicants are the release and extend rows' implicants: the
// op's lease held (ok) or gone (a failure; anything if it has none).
func perLeaseImplicants(leases []permitLease, op *permitOp, ok bool) []cube {
	mine := tokenMask(leases, op.token)
	switch {
	case ok && mine == 0:
		return nil
	case ok:
		return []cube{{mine, mine}}
	}
	return []cube{{0, mine}}
}

// tokenMask is the bit of token's lease in leases, if any.
func tokenMask(leases []permitLease, token string) uint64 {
	var mask uint64
	for j, l := range leases {
		if l.token == token {
			mask |= 1 << j
		}
	}
	return mask
}

// heldBy is the leases whose bits are set in mask.
func heldBy(leases []permitLease, mask uint64) []permitLease {
	held := make([]permitLease, 0, bits.OnesCount64(mask))
	for j := range leases {
		if mask&(1<<j) != 0 {
			held = append(held, leases[j])
		}
	}
	return held
}

// cube is an implicant: leases in care are decided, held where val is set
// and gone where it is not; the others are undecided.
type cube struct{ val, care uint64 }

// primeImplicants returns the prime implicants of legal over n variables
// (Quine-McCluskey): every legal set lies in one's range, and every set in
// a range is legal.
func primeImplicants(n int, legal func(uint64) bool) []cube {
	all := uint64(1)<<n - 1
	var level, primes []cube
	for m := uint64(0); m <= all; m++ {
		if legal(m) {
			level = append(level, cube{m, all})
		}
	}
	for len(level) > 0 {
		merged := make([]bool, len(level))
		var next []cube
		for i := range level {
			for j := i + 1; j < len(level); j++ {
				a, b := level[i], level[j]
				if diff := a.val ^ b.val; a.care == b.care && bits.OnesCount64(diff) == 1 {
					merged[i], merged[j] = true, true
					if c := (cube{a.val &^ diff, a.care &^ diff}); !slices.Contains(next, c) {
						next = append(next, c)
					}
				}
			}
		}
		for i, c := range level {
			if !merged[i] {
				primes = append(primes, c)
			}
		}
		level = next
	}
	return primes
}

// decide applies op at an instant in w with the leases of c held or gone:
// the state after it, and whether that is feasible.
func (m permitModel) decide(s permitState, op *permitOp, ok bool, w window, c cube) (permitState, bool) {
	n := s.size()
	// The new variable t's direct bounds: to[k] bounds t - x_k, from[k]
	// bounds x_k - t.
	to, from := make([]int64, n), make([]int64, n)
	for k := range n {
		to[k], from[k] = inf, inf
	}
	to[pZero], from[pZero], from[pLast] = w.to, -w.from, 0 // t in w, t >= l
	for j, l := range s.leases {
		switch v := pFirst + j; {
		case c.care&(1<<j) == 0:
		case c.val&(1<<j) != 0: // held: t <= E + eps
			to[v] = addBound(l.d, m.eps)
		default: // gone: t >= E - eps
			from[v] = m.eps - l.d
		}
	}
	x, feasible := closeWith(s.b, n, to, from)
	if !feasible {
		return permitState{}, false
	}
	return m.project(s, op, ok, c, x), true
}

// closeWith adds to the closed n x n matrix b a variable t with direct
// bounds to (t - x_k) and from (x_k - t), and returns the closed
// (n+1) x (n+1) matrix, t last, and whether it is satisfiable. b being
// closed, a shortest path through t enters and leaves it once, so the
// closure is O(n^2): t's row and column through b, then every pair via t.
func closeWith(b []int64, n int, to, from []int64) ([]int64, bool) {
	rowT, colT := make([]int64, n), make([]int64, n) // t - x_j, x_i - t
	for j := range n {
		rowT[j], colT[j] = inf, inf
		for k := range n {
			rowT[j] = min(rowT[j], addBound(to[k], b[k*n+j]))
			colT[j] = min(colT[j], addBound(b[j*n+k], from[k]))
		}
	}
	for k := range n {
		if addBound(rowT[k], from[k]) < 0 {
			return nil, false // a negative cycle through t
		}
	}
	m := n + 1
	x := make([]int64, m*m)
	for i := range n {
		for j := range n {
			x[i*m+j] = min(b[i*n+j], addBound(colT[i], rowT[j]))
		}
		x[i*m+n], x[n*m+i] = colT[i], rowT[i]
	}
	return x, true
}

// kept is one variable of the next state: where it was in the step's
// matrix, and its lease.
type kept struct {
	from  int
	lease permitLease
}

// project keeps, of the closed step matrix x (t last), the origin, t as
// the new l, the leases still possibly held (op's own as op left it), and
// drops those certainly gone.
func (m permitModel) project(s permitState, op *permitOp, ok bool, c cube, x []int64) permitState {
	n := s.size()
	t := n
	var ks []kept
	for j, l := range s.leases {
		if c.care&(1<<j) != 0 && c.val&(1<<j) == 0 {
			continue // gone at t
		}
		k := kept{pFirst + j, l}
		if ok && l.token == op.token {
			switch {
			case op.f == history.Release:
				continue
			case op.f == history.Extend && op.add:
				k.lease.d = min(l.d+op.ttl, maxD)
			case op.f == history.Extend:
				k.from, k.lease.d = t, op.ttl
			}
		}
		ks = append(ks, k)
	}
	if ok && op.f == history.Acquire {
		ks = append(ks, kept{t, permitLease{op.token, op.write, op.ttl}})
	}
	// Certainly gone at t, so at every later instant: no op can see it.
	ks = slices.DeleteFunc(ks, func(k kept) bool {
		return addBound(x[k.from*(n+1)+t], addBound(k.lease.d, m.eps)) < 0
	})
	slices.SortFunc(ks, func(a, b kept) int {
		return cmp.Or(strings.Compare(a.lease.token, b.lease.token), cmpBool(a.lease.write, b.lease.write))
	})
	idx := append([]int{pZero, t}, make([]int, len(ks))...)
	next := permitState{leases: make([]permitLease, len(ks))}
	for j, k := range ks {
		idx[pFirst+j], next.leases[j] = k.from, k.lease
	}
	next.sig = leaseSig(next.leases)
	size := len(idx)
	next.b = make([]int64, size*size)
	for i, a := range idx {
		for j, b := range idx {
			next.b[i*size+j] = x[a*(n+1)+b]
		}
	}
	if lastUnbounded {
		for j := range size {
			if j != pLast {
				next.b[pLast*size+j] = inf // l - x_j: l only bounds later instants below
			}
		}
	}
	return next
}

// lastUnbounded turns on l's relaxation (a benchmark turns it off, to
// measure it).
var lastUnbounded = true

func (s *permitState) hash() uint64 {
	v := s.sig // the leases' tokens, modes and TTLs (leaseSig)
	for _, b := range s.b {
		v = (v ^ uint64(b)) * 0xbf58476d1ce4e5b9
	}
	return v
}

// within reports whether every timeline a admits, b admits too: the same
// leases, and no bound of a looser than b's.
func (a *permitState) within(b *permitState) bool {
	if a.sig != b.sig || !slices.Equal(a.leases, b.leases) {
		return false
	}
	for i, v := range a.b {
		if v > b.b[i] {
			return false
		}
	}
	return true
}

func (a *permitState) equal(b *permitState) bool {
	return a.sig == b.sig && slices.Equal(a.leases, b.leases) && slices.Equal(a.b, b.b)
}
