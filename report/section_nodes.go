package report

import (
	"github.com/lockcheck/lockcheck/checker"
)

// nodesSection is the "nodes" section: the faults the nemesis injected, and the tail of each node's log.
var nodesSection = Section{Name: "nodes", Template: `<h2>Nodes</h2>
{{if .Faults}}<table><tr><th>fault</th><th>targets</th><th>from</th><th>to</th><th>error</th></tr>
{{range .Faults}}<tr><td>{{.Fault}}</td><td>{{range .Targets}}{{.}} {{end}}</td><td class="num">{{seconds .Start}}</td><td class="num">{{if lt .Stop 0}}never healed{{else}}{{seconds .Stop}}{{end}}</td><td>{{.Error}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No faults.</p>{{end}}
{{range .Logs}}<details><summary>{{.Name}} log (last {{.Lines}} lines)</summary><pre>{{.Text}}</pre></details>{{end}}`,
	Data: func(v *View) any {
		return struct {
			Faults []checker.FaultWindow
			Logs   []logView
		}{v.Stats.Faults, logs(v.Meta.Nodes)}
	}}
