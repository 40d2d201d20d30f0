package report

import (
	"html/template"
)

// leasesSection is the "leases" section: the TTL against the hold times, releases that found the lease gone, sections cut short.
var leasesSection = Section{Name: "leases", Template: `<h2>Leases</h2>
<table><tr><th>TTL</th><td class="num">{{.Stats.TTL}}</td></tr>
<tr><th>hold (acquire to release), p50 / p99 / max (ms)</th><td class="num">{{.HoldP50}} / {{.HoldP99}} / {{.HoldMax}}</td></tr>
<tr><th>releases that found the lease gone</th><td class="num">{{.Stats.ReleaseGone}}</td></tr>
<tr><th>critical sections cut short at the lease deadline</th><td class="num">{{.Stats.CutShort}}</td></tr>
{{if .Stats.SuggestedTTL}}<tr><th>suggested TTL (p99 hold × 1.5)</th><td class="num"><b>{{.Stats.SuggestedTTL}}</b>: the TTL is shorter than the p99 hold</td></tr>{{end}}
</table><div class="charts">{{.Chart}}</div>`,
	Data: func(v *View) any {
		s := v.Stats
		return struct {
			Stats                     *Stats
			HoldP50, HoldP99, HoldMax string
			Chart                     template.HTML
		}{s, ms(s.Hold, 50), ms(s.Hold, 99), ms(s.Hold, 100), holdChart(s)}
	}}
