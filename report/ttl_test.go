package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/lockcheck/lockcheck/history"
)

// TestAdvise: the TTL advice of a hand-built history of 100 leases under a
// 100 ms TTL, held 1..100 ms (the p99 hold is 99 ms) with the last five cut
// short, against the figures worked out by hand.
func TestAdvise(t *testing.T) {
	ms := int64(1_000_000)
	var ops []history.Op
	for i := int64(1); i <= 100; i++ {
		tok := fmt.Sprint("t", i)
		at := i * 1000 * ms
		ops = append(ops,
			history.Op{Process: int(i), F: history.Acquire, Type: history.OK, Key: "k", Token: tok, TTLms: 100, Call: at, Return: at},
			history.Op{Process: int(i), F: history.Write, Type: history.OK, Key: "k", Token: tok, Call: at, Return: at + i*ms, CutShort: i > 95},
			history.Op{Process: int(i), F: history.Release, Type: history.OK, Key: "k", Token: tok, Call: at + i*ms, Return: at + i*ms + ms})
	}
	// Ten more holds of 150 ms: over the TTL.
	for i := int64(101); i <= 110; i++ {
		tok := fmt.Sprint("t", i)
		at := i * 1000 * ms
		ops = append(ops,
			history.Op{Process: int(i), F: history.Acquire, Type: history.OK, Key: "k", Token: tok, TTLms: 100, Call: at, Return: at},
			history.Op{Process: int(i), F: history.Release, Type: history.Fail, Key: "k", Token: tok, Call: at + 150*ms, Return: at + 151*ms})
	}
	s := Compute(ops)
	a := s.Advice
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	if a.TTLms != 100 || a.Holds != 110 || a.HoldsOverTTL != 10 || a.Sections != 100 || a.CutShort != 5 || !near(a.CutShortFraction, 0.05) {
		t.Errorf("advice %+v: want TTL 100 ms, 110 holds, 10 over the TTL, 5 of 100 sections cut short", a)
	}
	if a.HoldP50ms < 54 || a.HoldP50ms > 57 || !near(a.HoldP99ms, 150) || !near(a.HoldMaxms, 150) {
		t.Errorf("holds p50/p99/max %v/%v/%v ms, want 55/150/150", a.HoldP50ms, a.HoldP99ms, a.HoldMaxms)
	}
	if len(a.Rules) != 1 || a.Rules[0].TTLms != 450 || a.Rules[0].Fits || a.Factor != DefaultTTLFactor {
		t.Errorf("rules %+v, want 3 × p99 = 450 ms once (the default factor is that rule), which the 100 ms TTL does not fit", a.Rules)
	}
	s.Advise(10)
	if r := s.Advice.Rules[1]; r.TTLms != 1500 || !strings.Contains(r.Rule, "× 10") || r.Fits {
		t.Errorf("factor 10: rule %+v, want 1500 ms", r)
	}
	// Holds well under the TTL fit every rule.
	short := Compute(ops[:30])
	short.Advise(0)
	for _, r := range short.Advice.Rules {
		if !r.Fits || r.TTLms > 100 {
			t.Errorf("holds of at most 10 ms: rule %+v, want one the 100 ms TTL fits", r)
		}
	}
}

// TestOverTime_NoPoints: a log latency chart with nothing to draw (a run
// whose lock process died before its first op) is an empty chart, not a
// panic; a chart gonum cannot draw at all is a line saying so.
func TestOverTime_NoPoints(t *testing.T) {
	nan := math.NaN()
	for _, series := range []map[string][]float64{{}, {"acquire-ok": {nan, nan}}} {
		if out := overTime("p99", "ms", 0.1, series, []string{"acquire-ok"}, nil, true); !strings.Contains(string(out), "<svg") {
			t.Errorf("series %v: %.80q, want an empty chart", series, out)
		}
	}
	p := plot.New()
	p.Title.Text = "broken"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = -1, 0
	if out := svg(p, 100, 100); !strings.Contains(string(out), "chart broken not drawn") {
		t.Errorf("degenerate log axis: %.80q, want a line saying the chart was not drawn", out)
	}
}
