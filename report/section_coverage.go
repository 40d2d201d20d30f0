package report

import "github.com/lockcheck/lockcheck/checker"

// coverageSection is the "coverage" section: what the run gave each
// classic failure the chance to show (checker.CoverageOf), the figures
// the run has as the summary prints them (coverageShown), and how many
// of each fault's windows hit a live lease.
var coverageSection = Section{Name: "coverage", Template: `<h2>Coverage</h2>
<p>What the verdict rests on: how often the run gave each failure its chance. A figure at 0 is a failure this run never tried.</p>
<table><tr><th>figure</th><th>count</th><th>meaning</th></tr>
{{range .Figures}}<tr><td>{{.Name}}</td><td class="num">{{.Count}}</td><td>{{.Meaning}}</td></tr>
{{end}}{{with .NoWindow}}<tr><td colspan="3">{{.}}</td></tr>
{{end}}{{range .Faults}}<tr><td>{{.Fault}}</td><td class="num">{{.Hits}} / {{.Windows}}</td><td>fault windows that began while a lease was live</td></tr>
{{end}}</table>`,
	Data: func(v *View) any {
		type figure struct {
			Name, Meaning string
			Count         int
		}
		var fs []figure
		shown, unfaulted := coverageShown(v.Findings.Coverage)
		for _, f := range shown {
			fs = append(fs, figure{f.Name, f.Meaning, v.Findings.Coverage[f.Name]})
		}
		noWindow := ""
		if len(unfaulted) > 0 {
			noWindow = noWindowLine(unfaulted)
		}
		return struct {
			Figures  []figure
			NoWindow string
			Faults   []checker.FaultHit
		}{fs, noWindow, v.Findings.Coverage.FaultHits()}
	}}
