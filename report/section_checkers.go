package report

// checkersSection is the "checkers" section: each checker's verdict,
// violation count and figures, and the guarantees not judged, with why.
var checkersSection = Section{Name: "checkers", Template: `<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>violations</th><th>figures</th><th>unknown keys</th></tr>
{{range .Findings.Checkers}}<tr><td>{{.Name}}</td><td><span class="pill {{.Verdict}}">{{.Verdict}}</span></td><td class="num">{{.ViolationCount}}</td>
<td>{{range $k, $v := .Figures}}{{$k}}={{$v}} {{end}}</td><td>{{range .Undecided}}{{.}}<br>{{else}}{{range .UnknownKeys}}{{.}} {{end}}{{end}}{{.Note}}</td></tr>
{{end}}{{range $g, $why := .Findings.NotJudged}}<tr><td>{{$g}}</td><td><span class="pill">n/a</span></td><td></td><td colspan="2">{{notJudged $g $why}}</td></tr>
{{end}}</table>`}
