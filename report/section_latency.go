package report

import (
	"html/template"
	"slices"
)

// latencySection is the "latency" section: percentiles per op class, the .hgrm files, and latency charts.
var latencySection = Section{Name: "latency", Template: `<h2>Latency</h2>
<table><tr><th>op</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td class="num">{{.Count}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td><td class="num">{{.Max}}</td></tr>
{{end}}</table>
<p class="muted">Milliseconds. HdrHistogram text: {{range .HgrmFiles}}<a href="{{.}}">{{.}}</a> {{end}}</p>
<div class="charts">{{.Percentiles}}{{.OverTime}}{{.Sections}}</div>
<p class="muted">Latency axes are logarithmic; the critical section (write, as long as the hold) has a chart of its own, so that it does not flatten the Redis ops.</p>`,
	Data: func(v *View) any {
		s := v.Stats
		d := struct {
			Rows                            []latencyRow
			HgrmFiles                       []string
			Percentiles, OverTime, Sections template.HTML
		}{HgrmFiles: v.HgrmFiles}
		var names []string
		for _, se := range Series {
			h := s.Latency[se.Name]
			if h.TotalCount() == 0 {
				continue
			}
			names = append(names, se.Name)
			d.Rows = append(d.Rows, latencyRow{Name: se.Name, Count: h.TotalCount(),
				P50: ms(h, 50), P90: ms(h, 90), P99: ms(h, 99), P999: ms(h, 99.9), Max: ms(h, 100)})
		}
		// Redis ops on their own charts; the critical section on another.
		ops := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "write" })
		d.Percentiles = latencyPercentiles("Redis op latency by percentile", s.Latency, ops)
		d.OverTime = overTime("p99 latency over time", "ms", s.Bucket.Seconds(), s.P99, ops, s.Faults, true)
		if len(ops) < len(names) {
			d.Sections = latencyPercentiles("Critical section (write) by percentile", s.Latency, []string{"write"})
		}
		return d
	}}
