package report

// violationsSection is the "violations" section: the first DrawnViolations violations, each with its explanation and a timeline of the ops on its key.
var violationsSection = Section{Name: "violations", Template: `<h2>Violations</h2>
{{if not .Drawn}}<p class="muted">None.</p>{{end}}
{{range .Drawn}}<div class="violation"><h3>{{.Checker}}: {{.V.Key}}</h3>
<p>{{.V.Message}}</p><div class="details">
{{if .V.Explanation}}<pre>{{range .V.Explanation}}{{.}}
{{end}}</pre>{{end}}
{{if .V.File}}<p>Linearizability visualization: <a href="{{.V.File}}">{{.V.File}}</a></p>{{end}}
<div class="charts">{{.Timeline}}</div></div></div>{{end}}
{{if .More}}<p>… and {{.More}} more in results.json.</p>{{end}}`,
	Data: func(v *View) any {
		var d struct {
			Drawn []violationView
			More  int
		}
		d.Drawn, d.More = violations(v.Findings, v.Ops, v.Stats.Faults)
		return d
	}}
