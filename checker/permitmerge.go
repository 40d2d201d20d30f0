package checker

import (
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
	if !slices.Equal(a.leases, b.leases) {
		return permitState{}, false
	}
	h := permitState{leases: a.leases, b: make([]int64, len(a.b))}
	for i := range a.b {
		h.b[i] = max(a.b[i], b.b[i])
	}
	if !differenceWithin(&h, a, b) { // h \ a within b: h within a ∪ b
		return permitState{}, false
	}
	return h, true
}

// differenceWithin says whether h \ a lies within b (h closed, a and b
// within h).
func differenceWithin(h, a, b *permitState) bool {
	n := h.size()
	piece := make([]int64, len(h.b))
	for i := range n {
		for j := range n {
			av := a.at(i, j)
			if av >= h.at(i, j) {
				continue
			}
			// The points of h breaking x_i - x_j <= av: h with
			// x_j - x_i <= -av - 1, closed through that one bound.
			c := -av - 1
			if addBound(c, h.at(i, j)) < 0 {
				continue // none
			}
			for u := range n {
				for v := range n {
					piece[u*n+v] = min(h.at(u, v), addBound(addBound(h.at(u, j), c), h.at(i, v)))
				}
			}
			for k, pv := range piece {
				if pv > b.b[k] {
					return false
				}
			}
		}
	}
	return true
}

// addMerged inserts s into set as add does, then replaces it and any
// member of its leases whose union with it is their hull (hullOf) by
// that hull, until none is.
func (set permitSet) addMerged(s permitState) permitSet {
	for {
		merged := false
		for i := range set {
			if set[i].s.within(&s) || s.within(&set[i].s) {
				continue
			}
			if h, ok := hullOf(&s, &set[i].s); ok {
				hullsMade.Add(1)
				set = slices.Delete(set, i, i+1)
				s, merged = h, true
				break
			}
		}
		if !merged {
			return addState(set, s)
		}
	}
}

// hullsMade counts the hulls addMerged has made, in this process: the
// oracle tests say how many of their histories made one.
var hullsMade atomic.Int64
