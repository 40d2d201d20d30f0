package report

import (
	"fmt"
	"html/template"

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
			if op.Key == v.Key && op.Return >= lo && op.Call <= hi {
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
			out = append(out, violationView{Checker: c.Name, V: v, Timeline: timeline(byKey[v.Key], v.Window, faults)})
		}
	}
	return out, total - len(out)
}

var opColor = map[history.Type]int{history.OK: 2, history.Fail: 1, history.Info: 3}

// timeline draws the ops of one key that overlap the window (widened by a
// quarter on each side), at most 60 lanes.
func timeline(ops []*history.Op, w [2]int64, faults []checker.FaultWindow) template.HTML {
	if len(ops) == 0 || w[1] <= w[0] {
		return ""
	}
	lo, hi := around(w)
	lanes := map[int]int{}
	var procs []int
	p := plot.New()
	p.Title.Text = "Ops on the key around the violation (green ok, red fail, orange info; writes thick)"
	p.X.Label.Text = "time (s)"
	type seg struct {
		op   *history.Op
		lane int
	}
	var segs []seg
	for _, op := range ops {
		if op.Return < lo || op.Call > hi {
			continue
		}
		l, ok := lanes[op.Process]
		if !ok {
			if len(lanes) == 60 {
				continue
			}
			l = len(lanes)
			lanes[op.Process] = l
			procs = append(procs, op.Process)
		}
		segs = append(segs, seg{op, l})
	}
	shadeFaults(p, faults, float64(lo)/1e9, float64(hi)/1e9, -0.5, float64(len(lanes))-0.5)
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
		p.Add(l)
	}
	var ticks []plot.Tick
	for i, pr := range procs {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("p%d", pr)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(len(lanes))-0.5
	h := vg.Length(2+len(lanes)) * 0.45 * vg.Centimeter
	return svg(p, 18*vg.Centimeter, max(h, 5*vg.Centimeter))
}
