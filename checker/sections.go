package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// lease names one lease at the resource: a client holds one lease at a
// time, and a lock that hands every client the same token must still
// show two holders (as Mutex reads it).
type lease struct {
	process int
	token   string
}

func leaseOf(w *history.Op) lease { return lease{w.Process, w.Token} }

// sections are the accepted writes of one key in their sections at the
// instant swept to, by lease.
type sections struct {
	in      []*history.Op  // the writes inside, by return
	count   map[lease]int  // writes inside, per lease
	leases  int            // leases with a write inside
	writers int            // write leases among them
	write   map[lease]bool // the key's write leases, as its acquires say
}

// enter adds w, after dropping the writes that left by its entry (a
// write exiting as another enters does not overlap it).
func (s *sections) enter(w *history.Op) {
	gone := 0
	for ; gone < len(s.in) && s.in[gone].Return <= w.Call; gone++ {
		s.leave(leaseOf(s.in[gone]))
	}
	s.in = s.in[gone:]
	i, _ := slices.BinarySearchFunc(s.in, w.Return, func(x *history.Op, r int64) int { return cmpInt(x.Return, r) })
	s.in = slices.Insert(s.in, i, w)
	l := leaseOf(w)
	if s.count[l]++; s.count[l] == 1 {
		s.leases++
		if s.write[l] {
			s.writers++
		}
	}
}

func (s *sections) leave(l lease) {
	if s.count[l]--; s.count[l] == 0 {
		delete(s.count, l)
		s.leases--
		if s.write[l] {
			s.writers--
		}
	}
}

// describe names the other leases inside, a few of them.
func (s *sections) describe(w *history.Op) string {
	var parts []string
	seen := map[lease]bool{leaseOf(w): true}
	for _, x := range s.in {
		if l := leaseOf(x); !seen[l] && len(parts) < 4 {
			seen[l] = true
			parts = append(parts, fmt.Sprintf("p%d (lease %s, %s..%s)", x.Process, short(x.Token), history.Seconds(x.Call), history.Seconds(x.Return)))
		}
	}
	if more := s.leases - 1 - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	return strings.Join(parts, ", ")
}

// sectionCheck sweeps each key's accepted writes in entry order (each
// surely inside only, as Mutex reads a clock_bound) and asks bad, at each
// entry, whether the sections inside then break the shape's rule: a
// message if they do. k is the key's permits (Permits).
func sectionCheck(name string, ops []history.Op, bad func(key string, in *sections, w *history.Op, k int) string) Result {
	res := Result{Name: name, Verdict: Valid, Figures: map[string]int64{}}
	keys, groups := byKey(ops, func(op *history.Op) bool {
		return op.F == history.Write && op.Type == history.OK || op.F == history.Acquire
	})
	var writes int64
	for _, key := range keys {
		in := &sections{count: map[lease]int{}, write: map[lease]bool{}}
		var ws []*history.Op
		for _, op := range groups[key] {
			if op.F == history.Write {
				ws = append(ws, op)
			} else if op.Access == history.AccessWrite && op.Type != history.Fail {
				in.write[leaseOf(op)] = true
			}
		}
		writes += int64(len(ws))
		ws = surely(ws)
		slices.SortFunc(ws, func(a, b *history.Op) int { return cmpInt(a.Call, b.Call)*2 + cmpInt(a.Index, b.Index) })
		k := Permits(groups[key])
		for _, w := range ws {
			in.enter(w)
			if msg := bad(key, in, w, k); msg != "" {
				res.add(Violation{Key: key, Message: msg, Ops: opsIn(in.in), Window: spanOf(in.in)})
			}
		}
	}
	res.Figures["writes"] = writes
	res.Figures["keys"] = int64(len(keys))
	if res.ViolationCount > 0 {
		res.Verdict = Invalid
	}
	return res
}

// spanOf is from the first entry to the last exit of ws.
func spanOf(ws []*history.Op) [2]int64 {
	span := [2]int64{ws[0].Call, ws[0].Return}
	for _, w := range ws {
		span[0], span[1] = min(span[0], w.Call), max(span[1], w.Return)
	}
	return span
}

func opsIn(ws []*history.Op) []int64 {
	out := make([]int64, len(ws))
	for i, w := range ws {
		out[i] = w.Index
	}
	return out
}
