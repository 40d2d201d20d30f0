package shrink

import (
	"context"
	"time"
)

// minWindow is the shortest a window is cut to, and the earliest one is
// moved to: a fault shorter than this is mostly its own start and stop.
const minWindow = 100 * time.Millisecond

// shortenWindows halves each window's length while the plan still breaks
// with the target, down to minWindow.
func (s *shrinker) shortenWindows(ctx context.Context) error {
	return s.halveEach(ctx, "window-lengths", func(p *Plan, i int) bool {
		w := &p.Windows[i]
		if w.Length/2 < minWindow {
			return false
		}
		w.Length /= 2
		return true
	})
}

// moveWindows moves each window to half its start while the plan still
// breaks with the target, no earlier than minWindow nor than the end of
// the window before it (the windows are played in order, one after
// another): a break that comes sooner lets the length be cut further
// (duration-again).
func (s *shrinker) moveWindows(ctx context.Context) error {
	return s.halveEach(ctx, "window-starts", func(p *Plan, i int) bool {
		floor := minWindow
		if i > 0 {
			prev := p.Windows[i-1]
			floor = max(floor, prev.Start+prev.Length)
		}
		w := &p.Windows[i]
		if w.Start/2 < floor {
			return false
		}
		w.Start /= 2
		return true
	})
}

// halveEach tries, for each window of the best plan in turn, the plan
// step makes of it (false: no smaller one), keeping each that breaks and
// trying again from it.
func (s *shrinker) halveEach(ctx context.Context, phase string, step func(p *Plan, i int) bool) error {
	for i := 0; i < len(s.st.Best.Windows) && ctx.Err() == nil; i++ {
		for ctx.Err() == nil {
			p := s.st.Best.Clone()
			if !step(&p, i) || !s.try(ctx, p) {
				break
			}
			s.accept(phase, p)
		}
	}
	return nil
}
