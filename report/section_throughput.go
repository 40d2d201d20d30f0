package report

// throughputSection is the "throughput" section: ops per second by outcome over time, fault windows shaded.
var throughputSection = Section{Name: "throughput", Template: `<h2>Throughput</h2><div class="charts">{{.}}</div>
<p class="muted">Fault windows are shaded.</p>`,
	Data: func(v *View) any {
		s := v.Stats
		return overTime("Throughput by outcome", "ops/s", s.Bucket.Seconds(),
			map[string][]float64{"ok": s.OK, "fail": s.Fail, "info": s.Info}, []string{"ok", "fail", "info"}, s.Faults, false)
	}}
