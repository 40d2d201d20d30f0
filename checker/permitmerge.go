package checker

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync/atomic"
)

// A shape's model forks a state for each order its concurrent ops may
// take and each lease a grant may have found gone; many such states
// differ only in the order of instants that no later op can tell apart
// (two read grants in flight together, placed either way). Subsumption
// (within) drops a state another holds; hull goes one step further: two
// states of the same leases whose union is itself a difference-bound
// matrix are replaced by that matrix, their hull.
//
// It is exact. The instants are integers (ns), and every bound is an
// integer, so the states' timelines may be read as integer points: a
// system of integer difference bounds has a real solution iff it has an
// integer one, and a closed one's projection has the same integer points
// as its points' projection, so every step and verdict of the model is
// the same read either way. Over the integers, hull(A, B) = A ∪ B is
// decided exactly: H \ A is the union, over each bound of A tighter than
// H's (x_i - x_j <= a), of H with the negated bound (x_j - x_i <= -a - 1),
// and each such piece must lie within B. Every step of the model is a
// relation on points, so it maps a union to the union of its images: the
// states after the hull are exactly those after the pair.

// hullOf is the hull of a and b if it admits exactly the timelines of a
// and b together, and ok says so; a and b must be closed and their leases
// the same.
func hullOf(a, b *permitState) (permitState, bool) {
	if a.sig != b.sig || !slices.Equal(a.leases, b.leases) || !hullExact(a, b) {
		return permitState{}, false
	}
	h := permitState{leases: a.leases, b: make([]int64, len(a.b)), sig: a.sig}
	for i := range a.b {
		h.b[i] = max(a.b[i], b.b[i])
	}
	return h, true
}

// hullExact says whether h, the hull of a and b, lies within a ∪ b: h \ a
// within b. A point of h outside a breaks a bound of a tighter than h's,
// x_i - x_j <= a_ij < b_ij = h_ij; those points are h with
// x_j - x_i <= -a_ij - 1, whose closure through that one bound is
// min(h_uv, h_uj - a_ij - 1 + h_iv), and they lie within b iff that is
// at most b_uv wherever h_uv is not already (b_uv < a_uv = h_uv). So only
// the pairs of a bound tighter in a and one tighter in b are read.
func hullExact(a, b *permitState) bool {
	n := a.size()
	var tighterA, tighterB []int // i*n+j
	for k, av := range a.b {
		switch bv := b.b[k]; {
		case av < bv:
			tighterA = append(tighterA, k)
		case bv < av:
			tighterB = append(tighterB, k)
		}
	}
	h := func(u, v int) int64 { return max(a.at(u, v), b.at(u, v)) }
	for _, ij := range tighterA {
		i, j := ij/n, ij%n
		c := -a.b[ij] - 1 // never empty: c + h_ij = b_ij - a_ij - 1 >= 0
		for _, uv := range tighterB {
			u, v := uv/n, uv%n
			if addBound(addBound(h(u, j), c), h(i, v)) > b.b[uv] {
				return false
			}
		}
	}
	return true
}

// merged is set with every two states of the same leases whose union is
// their hull (hullOf) replaced by it, until none is, and no state within
// another. frontierCheck's steps call it once a level of each config,
// rather than at each state added: a hot key's sets are hundreds of
// states, most of them of other leases. Once ctx is done it merges no
// more (a merge only ever saves work): a set of thousands of states took
// a check 90 s past its deadline (BenchmarkReadWrite_ContentionStall).
func (set permitSet) merged(ctx context.Context) permitSet {
	if len(set) < 2 || !hullMerging {
		return set
	}
	groups := map[uint64][]permitState{}
	for _, x := range set {
		groups[x.s.sig] = append(groups[x.s.sig], x.s)
	}
	if len(groups) == len(set) {
		return set
	}
	var out permitSet
	for _, g := range groups {
		for _, s := range hullAll(ctx, g) {
			out = out.add(s) // within tells other leases apart by sig first
		}
	}
	return out
}

// hullAll merges states of one lease signature pairwise into hulls until
// no two merge, or ctx is done.
func hullAll(ctx context.Context, states []permitState) []permitState {
	for i := 0; i < len(states); i++ {
		if ctx.Err() != nil {
			return states
		}
		for j := i + 1; j < len(states); j++ {
			if h, ok := hullOf(&states[i], &states[j]); ok {
				hullsMade.Add(1)
				states[i] = h
				states = slices.Delete(states, j, j+1)
				j = i // the hull may merge with one passed over
			}
		}
	}
	if len(states) > 2 && groupHulls {
		if h, ok := groupHull(states); ok {
			groupHullsMade.Add(1)
			return []permitState{h}
		}
	}
	return states
}

// groupHulls turns groupHull on (tests turn it off, to measure it).
var groupHulls = true

// groupHullsMade counts the group hulls made in this process.
var groupHullsMade atomic.Int64

// leaseSig hashes the leases of a state (tokens, modes and TTLs), so that
// only states of the same leases are tried for a hull.
func leaseSig(leases []permitLease) uint64 {
	if len(leases) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(hashSeed)
	for _, l := range leases {
		h.WriteString(l.token)
		if l.write {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
		var d [8]byte
		binary.LittleEndian.PutUint64(d[:], uint64(l.d))
		h.Write(d[:])
	}
	return h.Sum64()
}

// hullMerging turns merged on (benchmarks turn it off, to measure it).
var hullMerging = true

// hullsMade counts the hulls hullAll has made, in this process: the
// oracle tests say how many of their histories made one.
var hullsMade atomic.Int64

// A group hull. Two states need not make an exact hull where three do:
// three read grants placed in every order leave, after pairwise hulls,
// one state for each that came last (s_a, s_b <= s_c, and so on), no two
// of whose union is convex, while all three together are the box of
// their windows. So a group of one lease signature left by the pairwise
// merges is replaced by its hull when that lies within the group's union,
// which coveredBy decides exactly over the integers, as hullExact does
// for two.

// groupHull is the hull of states if it admits exactly their timelines
// together, and ok says so; states are closed, of the same leases, and
// at least two.
func groupHull(states []permitState) (permitState, bool) {
	h := permitState{leases: states[0].leases, b: slices.Clone(states[0].b), sig: states[0].sig}
	for _, s := range states[1:] {
		if s.sig != h.sig || !slices.Equal(s.leases, h.leases) {
			return permitState{}, false
		}
		for i, v := range s.b {
			h.b[i] = max(h.b[i], v)
		}
	}
	budget := coverBudget
	if !coveredBy(h.b, h.size(), states, &budget) {
		return permitState{}, false
	}
	return h, true
}

// coverBudget bounds the pieces one groupHull may cut: past it the hull
// is not made (a merge only ever saves work).
const coverBudget = 4096

// coveredBy says whether every integer point of p, a closed non-empty
// matrix over n variables, lies in one of states; false also once budget
// is spent. p less one state a it meets is the union of disjoint pieces,
// one for each bound of a tighter than p's (x_i - x_j <= a_ij): p with the
// bounds before it and the negated one (x_j - x_i <= -a_ij - 1); each
// piece misses a, so it must lie within the others.
func coveredBy(p []int64, n int, states []permitState, budget *int) bool {
	if *budget--; *budget < 0 {
		return false
	}
	at := -1
	for k := range states {
		if withinMatrix(p, states[k].b) {
			return true
		}
		if at < 0 && meets(p, states[k].b, n) {
			at = k
		}
	}
	if at < 0 {
		return false // p is not empty, and no state meets it
	}
	a, rest := states[at].b, slices.Concat(states[:at], states[at+1:])
	cur := slices.Clone(p)
	for k, av := range a {
		if av >= cur[k] {
			continue
		}
		i, j := k/n, k%n
		if piece, ok := tightened(cur, n, j, i, -av-1); ok && !coveredBy(piece, n, rest, budget) {
			return false
		}
		if cur, _ = tightened(cur, n, i, j, av); cur == nil {
			return true // the rest of p lies within a
		}
	}
	return true
}

// tightened is the closed b over n variables with x_u - x_v <= c added, and
// whether it is not empty (nil if empty).
func tightened(b []int64, n, u, v int, c int64) ([]int64, bool) {
	if addBound(c, b[v*n+u]) < 0 {
		return nil, false
	}
	out := slices.Clone(b)
	for i := range n {
		for j := range n {
			out[i*n+j] = min(out[i*n+j], addBound(addBound(b[i*n+u], c), b[v*n+j]))
		}
	}
	return out, true
}

// withinMatrix says whether no bound of a is looser than b's.
func withinMatrix(a, b []int64) bool {
	for i, v := range a {
		if v > b[i] {
			return false
		}
	}
	return true
}

// meets is false if closed a and b over n variables have no point in
// common for a reason of two bounds (x_i - x_j <= a_ij, x_j - x_i <= b_ji,
// summing below 0); true may still be wrong (a longer cycle), which only
// makes coveredBy cut pieces that a has none of.
func meets(a, b []int64, n int) bool {
	for k := range a {
		i, j := k/n, k%n
		if addBound(a[k], b[j*n+i]) < 0 {
			return false
		}
	}
	return true
}
