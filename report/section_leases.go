package report

import (
	"html/template"
)

// leasesSection is the "leases" section: the TTL against the hold times
// (TTLAdvice: what each rule of thumb gives), releases that found the
// lease gone, sections cut short.
var leasesSection = Section{Name: "leases", Template: `<h2>Leases</h2>
<table><tr><th>TTL</th><td class="num">{{.Stats.TTL}}</td></tr>
<tr><th>hold (acquire to release), p50 / p99 / max (ms)</th><td class="num">{{.HoldP50}} / {{.HoldP99}} / {{.HoldMax}}</td></tr>
<tr><th>holds longer than the TTL</th><td class="num">{{.A.HoldsOverTTL}} of {{.A.Holds}}</td></tr>
<tr><th>critical sections cut short at the lease deadline</th><td class="num">{{.Stats.CutShort}} of {{.A.Sections}} ({{printf "%.1f" .CutPct}}%)</td></tr>
<tr><th>releases that found the lease gone</th><td class="num">{{.Stats.ReleaseGone}}</td></tr>
{{range .A.Rules}}<tr><th>TTL by the rule {{.Rule}}</th><td class="num">{{if .Fits}}{{.TTLms}} ms: the TTL fits{{else}}<b>{{.TTLms}} ms</b>: the TTL is shorter{{end}}</td></tr>
{{end}}</table><div class="charts">{{.Chart}}</div>`,
	Data: func(v *View) any {
		s := v.Stats
		return struct {
			Stats                     *Stats
			A                         TTLAdvice
			CutPct                    float64
			HoldP50, HoldP99, HoldMax string
			Chart                     template.HTML
		}{s, s.Advice, 100 * s.Advice.CutShortFraction, ms(s.Hold, 50), ms(s.Hold, 99), ms(s.Hold, 100), holdChart(s)}
	}}
