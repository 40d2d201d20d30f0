package checker

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomClosed is a random closed, non-empty difference-bound matrix over
// n variables (the first, the origin, at 0), bounds in [-r, r] or absent.
func randomClosed(rng *rand.Rand, n int, r int64) []int64 {
	for {
		b := make([]int64, n*n)
		for i := range n {
			for j := range n {
				switch {
				case i == j:
				case rng.IntN(3) == 0:
					b[i*n+j] = inf
				default:
					b[i*n+j] = rng.Int64N(2*r+1) - r
				}
			}
		}
		for k := range n {
			for i := range n {
				for j := range n {
					b[i*n+j] = min(b[i*n+j], addBound(b[i*n+k], b[k*n+j]))
				}
			}
		}
		empty := false
		for i := range n {
			empty = empty || b[i*n+i] < 0
		}
		if !empty {
			return b
		}
	}
}

// holds says whether the point x (x[0] = 0) meets every bound of b.
func holds(b []int64, x []int64) bool {
	n := len(x)
	for i := range n {
		for j := range n {
			if v := b[i*n+j]; v < inf && x[i]-x[j] > v {
				return false
			}
		}
	}
	return true
}

// TestHullOf_AgreesWithPoints: hullOf's exactness test against the
// integer points themselves. For random pairs of closed matrices over the
// origin and two or three instants, bounds in [-4, 4], every integer
// point of a box wide enough to show any difference is tried: hullOf
// accepts a pair iff every point of the hull is a point of one of the
// two. Both answers must come up often.
func TestHullOf_AgreesWithPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const r, box = 4, 10
	var seen hullAnswers
	for c := range 20000 {
		n := 3 + rng.IntN(2)
		leases := make([]permitLease, n-pFirst)
		a := permitState{leases: leases, b: randomClosed(rng, n, r)}
		b := permitState{leases: leases, b: randomClosed(rng, n, r)}
		if c%2 == 0 {
			// Often one bound apart: the pairs a model forks.
			b.b = append([]int64(nil), a.b...)
			i, j := 1+rng.IntN(n-1), rng.IntN(n)
			if i != j {
				b.b[i*n+j] = rng.Int64N(2*r+1) - r
				b.b = closeAll(b.b, n)
				if b.b == nil {
					continue
				}
			}
		}
		h := make([]int64, n*n)
		for k := range h {
			h[k] = max(a.b[k], b.b[k])
		}
		want := coveredPoints(h, []permitState{a, b}, n, box)
		_, got := hullOf(&a, &b)
		if got != want {
			t.Fatalf("case %d: hullOf says %v, the points say %v:\na %v\nb %v", c, got, want, a.b, b.b)
		}
		seen.add(got)
	}
	seen.report(t, "20000 pairs", 1000)
}

// closeAll closes b over n variables, or is nil if it is empty.
func closeAll(b []int64, n int) []int64 {
	for k := range n {
		for i := range n {
			for j := range n {
				b[i*n+j] = min(b[i*n+j], addBound(b[i*n+k], b[k*n+j]))
			}
		}
	}
	for i := range n {
		if b[i*n+i] < 0 {
			return nil
		}
	}
	return b
}

// TestGroupHull_AgreesWithPoints: groupHull's exactness test against the
// integer points, as TestHullOf_AgreesWithPoints is hullOf's. Groups of
// three to five closed matrices over the origin and two or three
// instants: half of them a random box cut by orders of its instants (what
// grants placed in every order leave, whose union is often the box), half
// random matrices one bound apart. groupHull accepts a group iff every
// point of its hull is a point of one of the group. Both answers must
// come up often.
func TestGroupHull_AgreesWithPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	const r, box = 4, 24
	var seen hullAnswers
	for c := range 6000 {
		n := 3 + rng.IntN(2)
		leases := make([]permitLease, n-pFirst)
		base := randomClosed(rng, n, r)
		g := make([]permitState, 3+rng.IntN(3))
		for q := range g {
			var b []int64
			for b == nil {
				b = append([]int64(nil), base...)
				for range 1 + rng.IntN(2) + c%2 {
					i := 1 + rng.IntN(n-1)
					j := 1 + (i-1+1+rng.IntN(n-2))%(n-1) // another instant
					if c%2 == 0 {
						b[i*n+j] = min(b[i*n+j], 0) // x_i <= x_j: one order
					} else {
						b[i*n+j] = min(b[i*n+j], rng.Int64N(2*r+1)-r)
					}
				}
				b = closeAll(b, n)
			}
			g[q] = permitState{leases: leases, b: b}
		}
		h := append([]int64(nil), g[0].b...)
		for k := range h {
			for _, s := range g[1:] {
				h[k] = max(h[k], s.b[k])
			}
		}
		want := coveredPoints(h, g, n, box)
		_, got := groupHull(g)
		if got != want {
			var bs [][]int64
			for _, s := range g {
				bs = append(bs, s.b)
			}
			t.Fatalf("case %d: groupHull says %v, the points say %v (n %d):\n%v", c, got, want, n, bs)
		}
		seen.add(got)
	}
	seen.report(t, "6000 groups", 500)
}

// coveredPoints says whether every integer point of h in the box
// [-box, box] (the origin at 0) is a point of one of g.
func coveredPoints(h []int64, g []permitState, n int, box int64) bool {
	covered := true
	x := make([]int64, n)
	var walk func(v int)
	walk = func(v int) {
		if !covered {
			return
		}
		if v == n {
			if holds(h, x) && !slices.ContainsFunc(g, func(s permitState) bool { return holds(s.b, x) }) {
				covered = false
			}
			return
		}
		for x[v] = -box; x[v] <= box; x[v]++ {
			walk(v + 1)
		}
	}
	walk(1)
	return covered
}

// hullAnswers counts a hull test's answers: hulls exact and refused.
type hullAnswers struct{ exact, refused int }

func (h *hullAnswers) add(exact bool) {
	if exact {
		h.exact++
	} else {
		h.refused++
	}
}

// report logs the count, and fails t unless each answer came least times.
func (h hullAnswers) report(t *testing.T, what string, least int) {
	t.Helper()
	t.Logf("%s: %d hulls exact, %d refused, 0 disagreements", what, h.exact, h.refused)
	if h.exact < least || h.refused < least {
		t.Errorf("%d exact and %d refused: too one-sided to prove anything", h.exact, h.refused)
	}
}
