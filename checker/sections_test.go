package checker

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func acquireOf(p int, tok, access string, permits int) history.Op {
	return history.Op{Process: p, F: history.Acquire, Type: history.OK, Key: "k", Token: tok, TTLms: 10, Access: access, Permits: permits}
}

func TestSemaphore_Check(t *testing.T) {
	k2 := acquireOf(9, "z", "", 2)
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"two of two", []history.Op{k2, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 0},
		{"three of two", []history.Op{k2, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20), w(2, 3, "k", "c", 8, 9)}, 1},
		{"a chain, two at a time", []history.Op{k2, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 15), w(2, 3, "k", "c", 10, 20)}, 0},
		{"one lease's two writes count once", []history.Op{k2, w(0, 1, "k", "a", 0, 10), w(1, 1, "k", "a", 2, 8), w(2, 2, "k", "b", 5, 20)}, 0},
		{"no permits declared: a mutex", []history.Op{w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 1},
		{"an exit as another enters", []history.Op{k2, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20), w(2, 3, "k", "c", 10, 12)}, 0},
	}
	for _, tt := range tests {
		if got := Semaphore(tt.ops).ViolationCount; got != tt.want {
			t.Errorf("%s: %d violations, want %d", tt.name, got, tt.want)
		}
	}
}

func TestReadWrite_Check(t *testing.T) {
	ra, rb := acquireOf(1, "a", history.AccessRead, 0), acquireOf(2, "b", history.AccessRead, 0)
	wa, wb := acquireOf(1, "a", history.AccessWrite, 0), acquireOf(2, "b", history.AccessWrite, 0)
	tests := []struct {
		name string
		ops  []history.Op
		want int
	}{
		{"readers overlap", []history.Op{ra, rb, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 0},
		{"a writer overlaps a reader", []history.Op{wa, rb, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 1},
		{"a reader enters on a writer", []history.Op{ra, wb, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 1},
		{"writers in turn", []history.Op{wa, wb, w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 10, 20)}, 0},
		{"one writer's two writes", []history.Op{wa, w(0, 1, "k", "a", 0, 10), w(1, 1, "k", "a", 5, 8)}, 0},
		{"unknown leases are readers", []history.Op{w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 5, 20)}, 0},
	}
	for _, tt := range tests {
		if got := ReadWrite(tt.ops).ViolationCount; got != tt.want {
			t.Errorf("%s: %d violations, want %d", tt.name, got, tt.want)
		}
	}
}

// TestSections_AgreeWithInstants: on random sections (whole-unit times,
// each at least a unit long), each check is invalid iff at some instant
// p + 1/2 the leases inside break its rule, counted directly.
func TestSections_AgreeWithInstants(t *testing.T) {
	found := map[string][2]int{}
	for seed := 0; seed < 3000; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 89))
		k := 1 + r.IntN(3)
		var ops []history.Op
		write := map[lease]bool{}
		for p := range 2 + r.IntN(4) {
			tok := fmt.Sprintf("t%d", p%3) // a token may be shared: leases are (process, token)
			a := acquireOf(p, tok, history.AccessRead, k)
			if r.IntN(3) == 0 {
				a.Access, write[lease{p, tok}] = history.AccessWrite, true
			}
			ops = append(ops, a)
			for range 1 + r.IntN(2) {
				c := r.Int64N(20)
				ops = append(ops, w(0, p, "k", tok, c, c+1+r.Int64N(8)))
			}
		}
		semBad, rwBad := false, false
		for p := int64(0); p < 30; p++ {
			in := map[lease]bool{}
			for i := range ops {
				if o := &ops[i]; o.F == history.Write && 2*o.Call < 2*p+1 && 2*p+1 < 2*o.Return {
					in[leaseOf(o)] = true
				}
			}
			writers := 0
			for l := range in {
				writers += btoi(write[l])
			}
			semBad = semBad || len(in) > k
			rwBad = rwBad || writers > 0 && len(in) > 1
		}
		for name, c := range map[string]struct {
			bad bool
			res Result
		}{"semaphore": {semBad, Semaphore(ops)}, "read-write": {rwBad, ReadWrite(ops)}} {
			if (c.res.Verdict == Invalid) != c.bad {
				t.Fatalf("seed %d: %s check %s, counted at each instant: broken %v; ops %+v", seed, name, c.res.Verdict, c.bad, ops)
			}
			f := found[name]
			f[btoi(c.bad)]++
			found[name] = f
		}
	}
	t.Logf("random sections, [valid invalid]: %v", found)
	for name, f := range found {
		if f[0] < 300 || f[1] < 300 {
			t.Errorf("%s: %v valid and invalid: too one-sided", name, f)
		}
	}
}
