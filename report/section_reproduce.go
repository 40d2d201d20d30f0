package report

// reproduceSection is the "reproduce" section: the command that repeats the run, and run.json.
var reproduceSection = Section{Name: "reproduce", Template: `<h2>Reproduce</h2><pre>{{.Meta.Command}}</pre>
<details><summary>configuration (run.json)</summary><pre>{{.Meta.Config}}</pre></details>`}
