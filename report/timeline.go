package report

import (
	"fmt"
	"html/template"
	"image/color"
	"slices"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type violationView struct {
	Checker  string
	V        checker.Violation
	Timeline template.HTML
}

// Drawn are the violations the report draws: the first DrawnViolations,
// checker by checker.
func Drawn(rep checker.Findings) []checker.Violation {
	var out []checker.Violation
	for _, c := range rep.Checkers {
		for _, v := range c.Violations {
			if len(out) == DrawnViolations {
				return out
			}
			out = append(out, v)
		}
	}
	return out
}

// OnTimeline says whether op is on the timeline of one of drawn: all the
// report needs of a history it does not hold whole.
func OnTimeline(drawn []checker.Violation) func(*history.Op) bool {
	return func(op *history.Op) bool {
		for _, v := range drawn {
			lo, hi := around(v.Window)
			if op.Key == v.Key && (op.Return >= lo && op.Call <= hi || slices.Contains(v.Minimal, op.Index)) {
				return true
			}
		}
		return false
	}
}

// around is the span a violation's timeline shows: its window widened by
// a quarter on each side.
func around(w [2]int64) (lo, hi int64) {
	pad := (w[1] - w[0]) / 4
	return w[0] - pad, w[1] + pad
}

// violations draws the window around each Drawn violation: one lane per
// client, the ops on its key, faults shaded. ops need hold only the ops
// OnTimeline.
func violations(rep checker.Findings, ops []history.Op, faults []checker.FaultWindow) ([]violationView, int) {
	var out []violationView
	total := 0
	byKey := map[string][]*history.Op{}
	for i := range ops {
		if ops[i].Key != "" {
			byKey[ops[i].Key] = append(byKey[ops[i].Key], &ops[i])
		}
	}
	for _, c := range rep.Checkers {
		total += c.ViolationCount
	}
	for _, c := range rep.Checkers {
		for _, v := range c.Violations {
			if len(out) == DrawnViolations {
				break
			}
			out = append(out, violationView{Checker: c.Name, V: v, Timeline: timeline(byKey[v.Key], v, faults)})
		}
	}
	return out, total - len(out)
}

var opColor = map[history.Type]int{history.OK: 2, history.Fail: 1, history.Info: 3}

// timeline draws the ops of one key around the violation (laneOps),
// its fewest ops ringed in black.
func timeline(ops []*history.Op, v checker.Violation, faults []checker.FaultWindow) template.HTML {
	if len(ops) == 0 || v.Window[1] <= v.Window[0] {
		return ""
	}
	segs, procs, lo, hi := laneOps(ops, v)
	lanes := len(procs)
	p := plot.New()
	p.Title.Text = "Ops on the key around the violation (green ok, red fail, orange info; writes thick; the fewest ops that cannot all be true ringed in black)"
	p.X.Label.Text = "time (s)"
	shadeFaults(p, faults, float64(lo)/1e9, float64(hi)/1e9, -0.5, float64(lanes)-0.5)
	for _, sg := range segs {
		x0, x1 := float64(max(sg.op.Call, lo))/1e9, float64(min(sg.op.Return, hi))/1e9
		if x1 <= x0 {
			x1 = x0 + 1e-4
		}
		y := float64(sg.lane)
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
		if err != nil {
			continue
		}
		l.Color = palette[opColor[sg.op.Type]]
		l.Width = vg.Points(3)
		if sg.op.F == history.Write {
			l.Width = vg.Points(8)
		}
		if slices.Contains(v.Minimal, sg.op.Index) {
			ring := *l
			ring.Color, ring.Width = color.Black, l.Width+vg.Points(3)
			p.Add(&ring)
		}
		p.Add(l)
	}
	var ticks []plot.Tick
	for i, pr := range procs {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("p%d", pr)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(lanes)-0.5
	h := vg.Length(2+lanes) * 0.45 * vg.Centimeter
	return svg(p, 18*vg.Centimeter, max(h, 5*vg.Centimeter))
}

// seg is an op on its lane.
type seg struct {
	op   *history.Op
	lane int
}

// laneOps gives the ops OnTimeline keeps for v (those that overlap its
// window widened by a quarter, and its fewest ops wherever they are) a
// lane each per client, at most 60 lanes: first the lanes of the fewest
// ops, so that no crowd of clients pushes them off, then the others as
// they come; procs are the lanes' clients, [lo, hi] the time drawn.
func laneOps(ops []*history.Op, v checker.Violation) (segs []seg, procs []int, lo, hi int64) {
	keep := OnTimeline([]checker.Violation{v})
	lo, hi = around(v.Window)
	lanes := map[int]int{}
	lane := func(proc int) (int, bool) {
		l, ok := lanes[proc]
		if !ok && len(lanes) < 60 {
			l, ok = len(lanes), true
			lanes[proc] = l
			procs = append(procs, proc)
		}
		return l, ok
	}
	for _, op := range ops {
		if slices.Contains(v.Minimal, op.Index) {
			lane(op.Process)
			lo, hi = min(lo, op.Call), max(hi, op.Return)
		}
	}
	for _, op := range ops {
		if !keep(op) {
			continue
		}
		if l, ok := lane(op.Process); ok {
			segs = append(segs, seg{op, l})
		}
	}
	return segs, procs, lo, hi
}
