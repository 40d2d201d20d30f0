package report

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"bytes"
	"fmt"
	"html/template"
	"os"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Run is one run for a comparison.
type Run struct {
	Dir string
	Ops []history.Op
	// Stats, if set, are the run's (its ops need not be held then).
	Stats    *Stats
	Findings checker.Findings
	Meta     Meta
}

// stats returns r's Stats, computed from its ops if not given.
func (r Run) stats() *Stats {
	if r.Stats == nil {
		return Compute(r.Ops)
	}
	return r.Stats
}

type compareSide struct {
	Run
	Stats                *Stats
	OpsPerSec, AcqPerSec float64
}

var comparePage = template.Must(template.ParseFS(assets, "assets/compare.html.tmpl"))

// WriteCompare writes one page that puts two runs side by side: verdicts,
// violation counts, throughput, latency percentiles.
func WriteCompare(path string, before, after Run) error {
	side := func(r Run) compareSide {
		s := r.stats()
		c := compareSide{Run: r, Stats: s}
		if s.Duration > 0 {
			c.OpsPerSec = float64(s.Ops) / s.Duration.Seconds()
			c.AcqPerSec = float64(s.Acquisitions) / s.Duration.Seconds()
		}
		return c
	}
	a, b := side(before), side(after)
	type checkerRow struct {
		Name string
		A, B int
	}
	type latRow struct{ Name, A50, B50, A99, B99, A999, B999 string }
	var checkers []checkerRow
	for _, c := range a.Findings.Checkers {
		other, _ := b.Findings.Checker(c.Name)
		checkers = append(checkers, checkerRow{c.Name, c.ViolationCount, other.ViolationCount})
	}
	var lat []latRow
	hs := map[string]*hdrhistogram.Histogram{}
	var names []string
	for _, se := range Series {
		ha, hb := a.Stats.Latency[se.Name], b.Stats.Latency[se.Name]
		if ha.TotalCount()+hb.TotalCount() == 0 {
			continue
		}
		lat = append(lat, latRow{se.Name, ms(ha, 50), ms(hb, 50), ms(ha, 99), ms(hb, 99), ms(ha, 99.9), ms(hb, 99.9)})
		if se.Name == "acquire-ok" || se.Name == "release" {
			hs[se.Name+" before"], hs[se.Name+" after"] = ha, hb
			names = append(names, se.Name+" before", se.Name+" after")
		}
	}
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	var out bytes.Buffer
	err := comparePage.Execute(&out, map[string]any{
		"A": a, "B": b, "Checkers": checkers, "Latency": lat,
		"Percentiles": latencyPercentiles("Latency by percentile", hs, names),
		"Throughput": overTime("Throughput (ok ops/s)", "ops/s", a.Stats.Bucket.Seconds(),
			map[string][]float64{"before": a.Stats.OK, "after": rebucket(b.Stats, a.Stats.Bucket.Seconds())},
			[]string{"before", "after"}, nil, false),
		"CSS": template.CSS(css), "JS": template.JS(js),
	})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// rebucket puts s's ok throughput on buckets of width w seconds.
func rebucket(s *Stats, w float64) []float64 {
	if s.Bucket.Seconds() == w {
		return s.OK
	}
	n := int(s.Duration.Seconds()/w) + 1
	out := make([]float64, n)
	cnt := make([]float64, n)
	for i, v := range s.OK {
		j := min(int((float64(i)+0.5)*s.Bucket.Seconds()/w), n-1)
		out[j] += v
		cnt[j]++
	}
	for j := range out {
		if cnt[j] > 0 {
			out[j] /= cnt[j]
		}
	}
	return out
}
