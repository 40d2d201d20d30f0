package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockcheck/lockcheck/checker"
)

// BenchRow is one cell of a lockcheck bench sweep.
type BenchRow struct {
	Lock             string
	Clients, Keys    int
	Acquisitions     float64
	CriticalSections float64
	P99              float64 // acquire latency, ms
	SuccessRatio     float64
	Jain             float64
	Verdict          checker.Verdict
	BaselinePairs    float64
	Ratio            float64
}

var benchPage = template.Must(template.ParseFS(assets, "assets/bench.html.tmpl"))

// WriteBench writes bench.html: the table, and throughput and p99 acquire
// latency against clients, one line per lock and key count.
func WriteBench(path string, rows []BenchRow) error {
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	var b bytes.Buffer
	err := benchPage.Execute(&b, map[string]any{
		"Rows":       rows,
		"Throughput": againstClients(rows, "Acquisitions per second", "acquisitions/s", func(r BenchRow) float64 { return r.Acquisitions }),
		"P99":        againstClients(rows, "p99 acquire latency", "ms", func(r BenchRow) float64 { return r.P99 }),
		"CSS":        template.CSS(css), "JS": template.JS(js),
	})
	if err != nil {
		return fmt.Errorf("bench page: %w", err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func againstClients(rows []BenchRow, title, ylabel string, y func(BenchRow) float64) template.HTML {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "clients", ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	series := map[string]plotter.XYs{}
	var names []string
	for _, r := range rows {
		name := r.Lock + ", keys " + strconv.Itoa(r.Keys)
		if _, ok := series[name]; !ok {
			names = append(names, name)
		}
		series[name] = append(series[name], plotter.XY{X: float64(r.Clients), Y: y(r)})
	}
	for i, name := range names {
		xys := series[name]
		sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue
		}
		l.Color, pts.Color = palette[i%len(palette)], palette[i%len(palette)]
		p.Add(l, pts)
		p.Legend.Add(name, l)
	}
	p.Y.Min = 0
	return svg(p, 16*vg.Centimeter, 9*vg.Centimeter)
}
