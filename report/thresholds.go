package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockcheck/lockcheck/checker"
)

// Percentiles are one op series' latencies in results.json, in ms.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

// Throughput is results.json's throughput: per second of the history
// (first call to last return), the share of acquire attempts that
// acquired, and Jain's fairness index over the clients' acquisitions.
type Throughput struct {
	OpsPerSec          float64 `json:"ops_per_sec"`
	AcquisitionsPerSec float64 `json:"acquisitions_per_sec"`
	SuccessRatio       float64 `json:"success_ratio"`
	Jain               float64 `json:"jain"`
}

// LatencySeries are results.json's latency series: every acquire, each
// series of the report's charts (Series), the wait from a client's first
// attempt to its acquisition, and the hold.
func (s *Stats) latencySeries() map[string]*hdrhistogram.Histogram {
	m := map[string]*hdrhistogram.Histogram{"acquire": s.Acquire, "wait": s.Wait, "hold": s.Hold, "start_lag": s.StartLag}
	for name, h := range s.Latency {
		m[name] = h
	}
	return m
}

// Figures returns the latency percentiles and throughput of s.
func (s *Stats) Figures() (map[string]Percentiles, Throughput) {
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	lat := map[string]Percentiles{}
	for name, h := range s.latencySeries() {
		if h.TotalCount() == 0 {
			continue
		}
		lat[name] = Percentiles{Count: h.TotalCount(), P50: ms(h, 50), P90: ms(h, 90), P99: ms(h, 99), P999: ms(h, 99.9),
			Max: float64(h.Max()) / 1000}
	}
	t := Throughput{SuccessRatio: s.SuccessRatio, Jain: s.Jain}
	if secs := s.Duration.Seconds(); secs > 0 {
		t.OpsPerSec, t.AcquisitionsPerSec = float64(s.Ops)/secs, float64(s.Acquisitions)/secs
	}
	return lat, t
}

// Threshold is one --threshold: a figure of the run, compared with a
// value (README "Thresholds").
type Threshold struct {
	Expr   string
	Metric string
	Op     string
	Value  float64
}

// ThresholdResult is a threshold as the run met it, in results.json.
type ThresholdResult struct {
	Threshold string  `json:"threshold"`
	Actual    float64 `json:"actual"`
	Pass      bool    `json:"pass"`
	// Error says why the threshold could not be judged (a figure the run
	// does not have); it fails.
	Error string `json:"error,omitempty"`
}

var thresholdRE = regexp.MustCompile(`^\s*([a-z][a-z0-9_.:-]*?)\s*(<=|>=|==|!=|<|>)\s*([0-9.]+(?:e[+-]?[0-9]+)?)\s*(ns|us|µs|ms|s|m|%)?\s*$`)

var latencyStats = []string{"p50", "p90", "p99", "p99.9", "max", "count"}

// ParseThreshold parses "FIGURE OP VALUE": e.g. acquire.p99<5ms,
// acquisitions_per_sec>=2000, success_ratio>5%, stuck_acquires==0. A
// latency (SERIES.STAT) is compared in ms: its value may carry a unit.
func ParseThreshold(expr string) (Threshold, error) {
	m := thresholdRE.FindStringSubmatch(expr)
	if m == nil {
		return Threshold{}, fmt.Errorf("--threshold %q: want FIGURE OP VALUE, OP one of < <= > >= == != (e.g. acquire.p99<5ms, acquisitions_per_sec>=2000, stuck_acquires==0)", expr)
	}
	t := Threshold{Expr: strings.TrimSpace(expr), Metric: m[1], Op: m[2]}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return t, fmt.Errorf("--threshold %q: %q is not a number", expr, m[3])
	}
	_, stat, isLatency := latencyName(t.Metric)
	isLatency = isLatency && stat != "count" // a bare number for a latency is ms
	switch unit := m[4]; {
	case unit == "%":
		v /= 100
	case unit != "" && !isLatency:
		return t, fmt.Errorf("--threshold %q: %s is not a latency, so %s means nothing to it", expr, t.Metric, unit)
	case unit != "":
		d, err := time.ParseDuration(m[3] + strings.ReplaceAll(unit, "µ", "u"))
		if err != nil {
			return t, fmt.Errorf("--threshold %q: %v", expr, err)
		}
		v = float64(d) / float64(time.Millisecond)
	}
	t.Value = v
	return t, nil
}

// latencyName splits SERIES.STAT (STAT one of latencyStats).
func latencyName(metric string) (series, stat string, ok bool) {
	for _, st := range latencyStats {
		if s, found := strings.CutSuffix(metric, "."+st); found && s != "" {
			return s, st, true
		}
	}
	return "", "", false
}

// The bench's own figures, a cell's ratios (BenchRow): lockcheck's rate
// over redis-benchmark's pair rate, and over the lock's bare loop. A
// threshold on one is judged on the cell, after its baselines, not on
// the run.
const (
	BaselineRatio = "baseline_ratio"
	BareRatio     = "bare_ratio"
)

// IsRatio says whether t is judged on a bench cell's ratios.
func (t Threshold) IsRatio() bool { return t.Metric == BaselineRatio || t.Metric == BareRatio }

// JudgeCell meets each ratio threshold of ts with cell's ratios, and
// returns those that failed (a ratio not measured fails).
func JudgeCell(cell BenchRow, ts []Threshold) []string {
	var failed []string
	for _, t := range ts {
		if !t.IsRatio() {
			continue
		}
		v := map[string]float64{BaselineRatio: cell.Ratio, BareRatio: cell.BareRatio}[t.Metric]
		if v == 0 || !compare(v, t.Op, t.Value) {
			failed = append(failed, fmt.Sprintf("%s (actual %.2f)", t.Expr, v))
		}
	}
	return failed
}

// Judge meets each threshold with the figures of r.
func Judge(r Results, ts []Threshold) []ThresholdResult {
	var out []ThresholdResult
	for _, t := range ts {
		res := ThresholdResult{Threshold: t.Expr}
		v, err := r.Figure(t.Metric)
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Actual, res.Pass = v, compare(v, t.Op, t.Value)
		}
		out = append(out, res)
	}
	return out
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	}
	return a != b
}

// Figure returns the run's figure named name: SERIES.STAT of Latency
// (ms), a Throughput field, a Summary field, a Coverage figure, or a
// checker's figure (CHECKER.FIGURE, or FIGURE where one checker has it).
func (r Results) Figure(name string) (float64, error) {
	if series, stat, ok := latencyName(name); ok {
		p, found := r.Latency[series]
		if !found {
			return 0, fmt.Errorf("no %s latency in this run (series: %s)", series, strings.Join(sortedKeys(r.Latency), ", "))
		}
		return map[string]float64{"p50": p.P50, "p90": p.P90, "p99": p.P99, "p99.9": p.P999, "max": p.Max, "count": float64(p.Count)}[stat], nil
	}
	flat := map[string]float64{"ops_per_sec": r.Throughput.OpsPerSec, "acquisitions_per_sec": r.Throughput.AcquisitionsPerSec,
		"success_ratio": r.Throughput.SuccessRatio, "jain": r.Throughput.Jain, "ops": float64(r.Ops),
		"cut_short": float64(r.Summary.CutShort), "late_exits": float64(r.Summary.LateExits), "give_ups": float64(r.Summary.GiveUps),
		"lost": float64(r.Summary.Lost), "not_sent": float64(r.Summary.NotSent), "crashed": float64(r.Summary.Crashed),
		"paused": float64(r.Summary.Paused), "cut_off": float64(r.Summary.CutOff), "stale_rejected": float64(r.Summary.StaleRejected)}
	for k, v := range r.Coverage {
		flat[k] = float64(v)
	}
	owners := map[string][]string{}
	for _, c := range r.Checkers {
		for k, v := range c.Figures {
			flat[c.Name+"."+k] = float64(v)
			owners[k] = append(owners[k], c.Name)
		}
	}
	for k, cs := range owners {
		if _, taken := flat[k]; !taken && len(cs) == 1 {
			flat[k] = flat[cs[0]+"."+k]
		}
	}
	if v, ok := flat[name]; ok {
		return v, nil
	}
	if cs := owners[name]; len(cs) > 1 {
		return 0, fmt.Errorf("%s is a figure of %s: name one (%s.%s)", name, strings.Join(cs, " and "), cs[0], name)
	}
	return 0, fmt.Errorf("no figure %s in this run (see results.json: latency SERIES.p99, throughput, summary, coverage, checker figures)", name)
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Failed returns the thresholds that did not pass.
func Failed(rs []ThresholdResult) []ThresholdResult {
	var out []ThresholdResult
	for _, r := range rs {
		if !r.Pass {
			out = append(out, r)
		}
	}
	return out
}

// Regressions says how after did worse than before beyond max (a
// fraction): fewer acquisitions per second, a higher acquire p99, or a
// worse verdict (valid, unknown, invalid).
func Regressions(before, after Run, max float64) []string {
	var out []string
	worse := map[checker.Verdict]int{checker.Valid: 0, checker.Unknown: 1, checker.Invalid: 2}
	if worse[after.Findings.Verdict] > worse[before.Findings.Verdict] {
		out = append(out, fmt.Sprintf("verdict %s, was %s", after.Findings.Verdict, before.Findings.Verdict))
	}
	bl, bt := before.stats().Figures()
	al, at := after.stats().Figures()
	if at.AcquisitionsPerSec < bt.AcquisitionsPerSec*(1-max) {
		out = append(out, fmt.Sprintf("acquisitions/s %.1f, was %.1f (%+.1f%%, more than the %.0f%% allowed)",
			at.AcquisitionsPerSec, bt.AcquisitionsPerSec, 100*(at.AcquisitionsPerSec/bt.AcquisitionsPerSec-1), 100*max))
	}
	if b, a := bl["acquire"].P99, al["acquire"].P99; b > 0 && a > b*(1+max) {
		out = append(out, fmt.Sprintf("acquire p99 %.3f ms, was %.3f ms (%+.1f%%, more than the %.0f%% allowed)", a, b, 100*(a/b-1), 100*max))
	}
	return out
}
