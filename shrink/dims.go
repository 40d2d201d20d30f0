package shrink

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// try says whether plan p breaks with the target: yes once Need of its
// runs did, no once too few of its runs are left for that (a harness
// failure or a break with another finding is a run that did not). What
// each plan did is kept, so a plan is never run past its count twice,
// resumed shrinks included.
func (s *shrinker) try(ctx context.Context, p Plan) bool {
	key := p.Key()
	t := s.st.Tried[key]
	need := max(s.st.Need, 1)
	for t.Broke < need && need-t.Broke <= s.runs-t.Runs && ctx.Err() == nil {
		out, err := s.cfg.Trial(ctx, p)
		if ctx.Err() != nil {
			s.discard(out.Dir) // interrupted: counts for nothing
			break
		}
		t.Runs++
		s.st.Runs++
		b, broke := Earliest(out.Breaks, s.cfg.Target)
		if err != nil || !broke {
			s.discard(out.Dir)
		} else {
			t.Broke++
			s.discard(s.st.BestDir)
			s.st.BestDir, s.st.BreakAt = out.Dir, b.End
		}
		s.st.Tried[key] = t
		s.save()
	}
	return t.Broke >= need
}

// baseline runs the original Runs times: a candidate is kept when it
// breaks in at least half as many of its runs (one at least), so that a
// shrink does not walk into a plan that breaks far less often than the
// run it came from.
func (s *shrinker) baseline(ctx context.Context) error {
	for s.st.Baseline.Runs < s.runs && ctx.Err() == nil {
		out, err := s.cfg.Trial(ctx, s.cfg.From)
		s.discard(out.Dir)
		if ctx.Err() != nil {
			return nil
		}
		s.st.Runs++
		s.st.Baseline.Runs++
		if _, broke := Earliest(out.Breaks, s.cfg.Target); err == nil && broke {
			s.st.Baseline.Broke++
		}
		s.save()
	}
	b := s.st.Baseline
	if b.Runs == 0 {
		return nil
	}
	s.st.Need = max(1, (b.Broke+1)/2)
	fmt.Fprintf(s.log, "shrink: baseline: the original broke in %d of %d runs; a candidate is kept when it breaks in %d of its %d\n", b.Broke, b.Runs, s.st.Need, s.runs)
	return nil
}

// discard removes a run's results that no plan kept.
func (s *shrinker) discard(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// accept makes p the best plan so far (phase names the step).
func (s *shrinker) accept(phase string, p Plan) {
	before := s.st.Best.Size()
	s.st.Best = p.Clone()
	s.save()
	fmt.Fprintf(s.log, "shrink: %s: %s -> %s (%d runs, %v)\n", phase, before, p.Size(), s.st.Runs, s.st.Elapsed.Round(time.Second))
}

// cutDuration ends the run a little past its break: a quarter of the
// time to it, half a second at least, in tenths of a second; the
// windows that would start after the end go with it.
func (s *shrinker) cutDuration(ctx context.Context) error {
	at := time.Duration(s.st.BreakAt)
	d := (at + max(at/4, 500*time.Millisecond)).Round(100 * time.Millisecond)
	best := s.st.Best
	if at <= 0 || d >= best.Duration {
		return nil
	}
	p := best.Clone()
	p.Duration = d
	p.Windows = slices.DeleteFunc(p.Windows, func(w nemesis.Window) bool { return w.Start >= d })
	if s.try(ctx, p) {
		s.accept("duration", p)
	}
	return nil
}

// cutClients drops clients (ddmin), one at least left.
func (s *shrinker) cutClients(ctx context.Context) error {
	base := s.st.Best.Clone()
	s.ddmin(ctx, "clients", len(base.Clients), 1, func(keep []int) Plan {
		p := base.Clone()
		p.Clients = pick(base.Clients, keep)
		return p
	})
	return nil
}

// cutWindows drops fault windows (ddmin), all of them if the run breaks
// without.
func (s *shrinker) cutWindows(ctx context.Context) error {
	base := s.st.Best.Clone()
	s.ddmin(ctx, "windows", len(base.Windows), 0, func(keep []int) Plan {
		p := base.Clone()
		p.Windows = pick(base.Windows, keep)
		if p.Windows == nil {
			p.Windows = []nemesis.Window{}
		}
		return p
	})
	return nil
}

// cutKeys tries 1 key, then 2, 4, ... below the plan's: the fewest that
// breaks. (Keys are drawn, not listed: a client's picks change with
// their count, so this is a search over the count, not over keys.)
func (s *shrinker) cutKeys(ctx context.Context) error {
	best := s.st.Best
	for k := 1; k < best.Keys && ctx.Err() == nil; k *= 2 {
		p := best.Clone()
		p.Keys = k
		if s.try(ctx, p) {
			s.accept("keys", p)
			return nil
		}
	}
	return nil
}

// pick is the elements of xs at the indexes keep.
func pick[T any](xs []T, keep []int) []T {
	var out []T
	for _, i := range keep {
		out = append(out, xs[i])
	}
	return out
}

// ddmin is Zeller's delta debugging over n elements, at least least of
// them kept: each part of the kept set alone, then the kept set less
// each part, in finer parts when none breaks, down to one element a
// part. cut is the plan that keeps the elements at the given indexes.
func (s *shrinker) ddmin(ctx context.Context, name string, n, least int, cut func(keep []int) Plan) {
	keep := make([]int, n)
	for i := range keep {
		keep[i] = i
	}
	if least == 0 && n > 0 && s.try(ctx, cut(nil)) {
		s.accept(name, cut(nil))
		return
	}
	parts := 2
	for len(keep) > max(least, 1) && ctx.Err() == nil {
		parts = min(parts, len(keep))
		next, alone, ok := s.ddStep(ctx, keep, parts, least, cut)
		switch {
		case ok && alone:
			keep, parts = next, 2
		case ok:
			keep, parts = next, max(parts-1, 2)
		case parts >= len(keep):
			return
		default:
			parts = min(parts*2, len(keep))
		}
		if ok {
			s.accept(name, cut(keep))
		}
	}
}

// ddStep tries keep's parts alone, then keep less each part, and returns
// the first that breaks, and whether it was a part alone.
func (s *shrinker) ddStep(ctx context.Context, keep []int, parts, least int, cut func([]int) Plan) ([]int, bool, bool) {
	chunks := split(keep, parts)
	for _, c := range chunks {
		if len(c) >= least && len(c) < len(keep) && s.try(ctx, cut(c)) {
			return c, true, true
		}
	}
	if parts == 2 {
		return nil, false, false // each half is the other's complement
	}
	for i := range chunks {
		var rest []int
		for j, c := range chunks {
			if j != i {
				rest = append(rest, c...)
			}
		}
		if len(rest) >= least && s.try(ctx, cut(rest)) {
			return rest, false, true
		}
	}
	return nil, false, false
}

// split is xs in parts of near-equal length, in order.
func split(xs []int, parts int) [][]int {
	var out [][]int
	for i := 0; i < parts; i++ {
		lo, hi := i*len(xs)/parts, (i+1)*len(xs)/parts
		if hi > lo {
			out = append(out, xs[lo:hi])
		}
	}
	return out
}

// measure runs the best plan until Measure runs are made (resumed ones
// counted) and counts those that broke with the target.
func (s *shrinker) measure(ctx context.Context) {
	n := s.cfg.Measure
	if n <= 0 {
		n = s.runs
	}
	for s.st.Measured < n && ctx.Err() == nil {
		out, err := s.cfg.Trial(ctx, s.st.Best)
		if ctx.Err() != nil {
			s.discard(out.Dir)
			return
		}
		s.st.Runs++
		s.st.Measured++
		if _, broke := Earliest(out.Breaks, s.cfg.Target); err == nil && broke {
			s.st.Reproduced++
			if s.st.BestDir == "" {
				s.st.BestDir = out.Dir
				out.Dir = ""
			}
		}
		s.discard(out.Dir)
		s.save()
	}
}
