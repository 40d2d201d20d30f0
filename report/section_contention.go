package report

import (
	"html/template"
)

// contentionSection is the "contention" section: attempts, success ratio, wait to acquire and fairness over clients.
var contentionSection = Section{Name: "contention", Template: `<h2>Contention</h2>
<table><tr><th>acquire attempts</th><td class="num">{{.Stats.AcquireAttempts}}</td></tr>
<tr><th>acquisitions</th><td class="num">{{.Stats.Acquisitions}}</td></tr>
<tr><th>success ratio</th><td class="num">{{printf "%.3f" .Stats.SuccessRatio}}</td></tr>
<tr><th>wait to acquire, p50 / p99 (ms, with retries)</th><td class="num">{{.WaitP50}} / {{.WaitP99}}</td></tr>
<tr><th>fairness (Jain's index over clients)</th><td class="num">{{printf "%.3f" .Stats.Jain}}</td></tr></table>
<div class="charts">{{.Chart}}</div>`,
	Data: func(v *View) any {
		s := v.Stats
		per := make([]float64, len(s.PerClient))
		for i, n := range s.PerClient {
			per[i] = float64(n)
		}
		return struct {
			Stats            *Stats
			WaitP50, WaitP99 string
			Chart            template.HTML
		}{s, ms(s.Wait, 50), ms(s.Wait, 99), distribution("Acquisitions per client", "acquisitions", per, 0, "")}
	}}
