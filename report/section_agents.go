package report

import (
	"fmt"
	"html/template"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// agentsSection is the "agents" section of a run whose clients were on
// agents: each agent's share, what it sent, whether it was lost, and its
// clock's offset from the coordinator's with the bound of each
// measurement over time: what every op's clock_bound rests on.
var agentsSection = Section{Name: "agents", Template: `{{with .}}<h2>Agents</h2>
<p>The clients ran on {{len .Agents}} agents; each op was put on the coordinator's clock with the measurement that bounds it tightest, widened by the drift allowance since (its <code>clock_bound</code>).</p>
<table><tr><th>agent</th><th>address</th><th>processes</th><th>ops received</th><th>offset (best)</th><th>± bound</th><th>round trip</th><th>widest clock_bound</th><th>lost</th></tr>
{{range .Agents}}<tr><td class="num">{{.Index}}</td><td>{{.Addr}}</td><td class="num">{{.FirstProc}}–{{.Last}}</td><td class="num">{{.OpsSent}}</td><td class="num">{{.Offset}}</td><td class="num">{{.Bound}}</td><td class="num">{{.RTT}}</td><td class="num">{{.MaxClockBound}}</td><td>{{.Lost}}</td></tr>
{{end}}</table>
{{.Offsets}}{{.Bounds}}{{end}}`,
	Data: func(v *View) any {
		if len(v.Meta.Agents) == 0 {
			return nil
		}
		type row struct {
			RunAgent
			Last int
		}
		var rows []row
		for _, a := range v.Meta.Agents {
			rows = append(rows, row{a, a.FirstProc + a.Clients - 1})
		}
		return struct {
			Agents          []row
			Offsets, Bounds template.HTML
		}{rows, agentClockChart(v.Meta.Agents, "each agent's clock offset (agent − coordinator)", "offset (ms)", func(s RunClockSample) float64 { return float64(s.Offset) / 1e6 }),
			agentClockChart(v.Meta.Agents, "the bound of each measurement (half its round trip)", "bound (ms)", func(s RunClockSample) float64 { return float64(s.Bound) / 1e6 })}
	}}

// agentClockChart plots y of every agent's clock measurements over the
// agent's time.
func agentClockChart(agents []RunAgent, title, ylabel string, y func(RunClockSample) float64) template.HTML {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "time (s)", ylabel
	p.Legend.Top = true
	for i, a := range agents {
		var xys plotter.XYs
		for _, s := range a.Clock {
			xys = append(xys, plotter.XY{X: float64(s.At) / 1e9, Y: y(s)})
		}
		if len(xys) > 0 {
			addLine(p, xys, i, fmt.Sprintf("agent %d", a.Index))
		}
	}
	return svg(p, 18*vg.Centimeter, 7*vg.Centimeter)
}
