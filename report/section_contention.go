package report

import (
	"html/template"

	"github.com/lockcheck/lockcheck/history"
)

// contentionSection is the "contention" section: the retry policy,
// attempts per acquisition, success ratio, the wait to acquire and its
// distribution, give-ups, leases never released and the stall after them,
// and fairness over clients.
var contentionSection = Section{Name: "contention", Template: `<h2>Contention</h2>
<table>{{if .Retry}}<tr><th>retry policy</th><td class="num">{{.Retry}}</td></tr>{{end}}
<tr><th>acquire attempts</th><td class="num">{{.Stats.AcquireAttempts}}</td></tr>
<tr><th>acquisitions</th><td class="num">{{.Stats.Acquisitions}}</td></tr>
<tr><th>attempts per acquisition</th><td class="num">{{printf "%.2f" .PerAcq}}</td></tr>
<tr><th>success ratio</th><td class="num">{{printf "%.3f" .Stats.SuccessRatio}}</td></tr>
<tr><th>wait to acquire, p50 / p99 / max (ms, with retries)</th><td class="num">{{.WaitP50}} / {{.WaitP99}} / {{.WaitMax}}</td></tr>
<tr><th>acquisitions given up after the last retry</th><td class="num">{{.U.GiveUps}}</td></tr>
<tr><th>leases never released (skipped release, crashed holder)</th><td class="num">{{.Stats.Abandoned}}{{if .U.Skipped}} ({{.U.Skipped}} releases skipped){{end}}</td></tr>
{{if .Stats.Abandoned}}<tr><th>key unavailable after one, p50 / max (ms; the TTL bounds it)</th><td class="num">{{.StallP50}} / {{.StallMax}}</td></tr>{{end}}
<tr><th>fairness (Jain's index over clients)</th><td class="num">{{printf "%.3f" .Stats.Jain}}</td></tr></table>
<div class="charts">{{.Wait}}{{.Chart}}</div>`,
	Data: func(v *View) any {
		s := v.Stats
		per := make([]float64, len(s.PerClient))
		for i, n := range s.PerClient {
			per[i] = float64(n)
		}
		var perAcq float64
		if s.Acquisitions > 0 {
			perAcq = float64(s.AcquireAttempts) / float64(s.Acquisitions)
		}
		return struct {
			Stats                     *Stats
			Retry                     string
			U                         history.Unrecorded
			PerAcq                    float64
			WaitP50, WaitP99, WaitMax string
			StallP50, StallMax        string
			Wait, Chart               template.HTML
		}{s, v.Meta.Retry, v.Meta.Unrecorded, perAcq, ms(s.Wait, 50), ms(s.Wait, 99), ms(s.Wait, 100),
			ms(s.AbandonedStall, 50), ms(s.AbandonedStall, 100),
			distribution("Wait to acquire (first attempt to acquisition)", "ms", histValues(s.Wait), 0, ""),
			distribution("Acquisitions per client", "acquisitions", per, 0, "")}
	}}
