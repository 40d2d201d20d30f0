package report

// checkersSection is the "checkers" section: each checker's verdict, violation count and figures.
var checkersSection = Section{Name: "checkers", Template: `<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>violations</th><th>figures</th><th>unknown keys</th></tr>
{{range .Findings.Checkers}}<tr><td>{{.Name}}</td><td><span class="pill {{.Verdict}}">{{.Verdict}}</span></td><td class="num">{{.ViolationCount}}</td>
<td>{{range $k, $v := .Figures}}{{$k}}={{$v}} {{end}}</td><td>{{range .Undecided}}{{.}}<br>{{else}}{{range .UnknownKeys}}{{.}} {{end}}{{end}}{{.Note}}</td></tr>
{{end}}</table>`}
