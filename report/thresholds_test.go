package report

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
)

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		expr, metric, op string
		value            float64
	}{
		{"acquire.p99<5ms", "acquire.p99", "<", 5},
		{"acquire.p99.9 <= 2s", "acquire.p99.9", "<=", 2000},
		{"release.max<250us", "release.max", "<", 0.25},
		{"acquire.p50<3", "acquire.p50", "<", 3}, // a bare latency is ms
		{"acquisitions_per_sec>=2000", "acquisitions_per_sec", ">=", 2000},
		{"success_ratio>5%", "success_ratio", ">", 0.05},
		{"stuck_acquires==0", "stuck_acquires", "==", 0},
		{"mutex.double_holders!=1", "mutex.double_holders", "!=", 1},
		{"hit:kill-redis>=3", "hit:kill-redis", ">=", 3},
	} {
		got, err := ParseThreshold(tc.expr)
		if err != nil || got.Metric != tc.metric || got.Op != tc.op || got.Value != tc.value {
			t.Errorf("%q: got %+v, %v; want %s %s %g", tc.expr, got, err, tc.metric, tc.op, tc.value)
		}
	}
	for expr, want := range map[string]string{
		"acquire.p99":               "want FIGURE OP VALUE",
		"acquire.p99 =< 5ms":        "want FIGURE OP VALUE",
		"acquisitions_per_sec>20ms": "is not a latency",
		"acquire.p99<5 fortnights":  "want FIGURE OP VALUE",
		"Acquire.p99<5ms":           "want FIGURE OP VALUE",
	} {
		if _, err := ParseThreshold(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error saying %q", expr, err, want)
		}
	}
}

func TestJudge(t *testing.T) {
	r := Results{Ops: 10, Latency: map[string]Percentiles{"acquire": {Count: 5, P99: 4.5, Max: 9}},
		Throughput: Throughput{AcquisitionsPerSec: 1500, SuccessRatio: 0.2},
		Summary:    Summary{CutShort: 2}, Coverage: checker.Coverage{"contended": 7},
		Checkers: []checker.Result{{Name: "mutex", Figures: map[string]int64{"keys": 3, "double_holders": 0}},
			{Name: "linearizable", Figures: map[string]int64{"keys": 3}}, {Name: "liveness", Figures: map[string]int64{"stuck_acquires": 1}}}}
	var ts []Threshold
	exprs := []string{"acquire.p99<5ms", "acquire.max<5ms", "acquisitions_per_sec>=2000", "success_ratio>5%", "stuck_acquires==0",
		"double_holders==0", "mutex.keys==3", "keys==3", "cut_short<=2", "contended>5", "release.p99<1ms", "nope>1"}
	for _, e := range exprs {
		th, err := ParseThreshold(e)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	want := map[string]string{"acquire.p99<5ms": "pass", "acquire.max<5ms": "fail", "acquisitions_per_sec>=2000": "fail",
		"success_ratio>5%": "pass", "stuck_acquires==0": "fail", "double_holders==0": "pass", "mutex.keys==3": "pass",
		"keys==3": "figure of mutex and linearizable", "cut_short<=2": "pass", "contended>5": "pass",
		"release.p99<1ms": "no release latency", "nope>1": "no figure nope"}
	got := Judge(r, ts)
	for _, g := range got {
		w := want[g.Threshold]
		switch {
		case w == "pass" && !g.Pass, w == "fail" && (g.Pass || g.Error != ""):
			t.Errorf("%s: %+v, want %s", g.Threshold, g, w)
		case w != "pass" && w != "fail" && (g.Pass || !strings.Contains(g.Error, w)):
			t.Errorf("%s: %+v, want failed with %q", g.Threshold, g, w)
		}
	}
	if n := len(Failed(got)); n != 6 {
		t.Errorf("%d failed, want 6", n)
	}
}
