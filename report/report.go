package report

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/xml"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

//go:embed assets
var assets embed.FS

// Meta is what the report says about the run besides its history.
type Meta struct {
	Lock, Redis, Lockcheck, Topology string
	// LockVersion names the version of a user's lock; empty for locks
	// built into lockcheck.
	LockVersion string
	// Command reproduces the run, seed included.
	Command string
	// Config is run.json, shown as is.
	Config string
	// Nodes maps node names to their log files.
	Nodes map[string]string
	// External is set for a run on an external Redis.
	External *RunExternal
	// Thresholds are the run's --threshold results (a JUnit case each).
	Thresholds []ThresholdResult
	// Retry is the clients' retry policy; TTLFactor the p99 rule's
	// factor of the TTL advice.
	Retry     string
	TTLFactor float64
	// Unrecorded are what the clients counted besides the history.
	Unrecorded history.Unrecorded
}

// DrawnViolations caps the violations the page draws a timeline for, of
// the up to checker.MaxViolations each checker keeps (the rest are listed
// by count).
const DrawnViolations = 20

var page = template.Must(template.ParseFS(assets, "assets/report.html.tmpl"))

type violationView struct {
	Checker  string
	V        checker.Violation
	Timeline template.HTML
}

type latencyRow struct {
	Name                     string
	Count                    int64
	P50, P90, P99, P999, Max string
}

type logView struct {
	Name  string
	Lines int
	Text  string
}

type pageData struct {
	Meta        Meta
	Verdict     checker.Verdict
	VerdictText string
	Stats       *Stats
	Duration    time.Duration
	OpsPerSec   float64
	Sections    []renderedSection
	CSS         template.CSS
	JS          template.JS
}

func ms(h *hdrhistogram.Histogram, q float64) string {
	if h.TotalCount() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(h.ValueAtQuantile(q))/1000)
}

// Write writes report.html, junit.xml and latency-<op>.hgrm into dir.
func Write(dir string, ops []history.Op, rep checker.Findings, meta Meta) error {
	return WriteStats(dir, ops, Compute(ops), rep, meta)
}

// WriteStats is Write with the history's Stats already computed.
func WriteStats(dir string, ops []history.Op, s *Stats, rep checker.Findings, meta Meta) error {
	hgrms, err := writeHgrm(dir, s)
	if err != nil {
		return err
	}
	if err := writeJUnit(filepath.Join(dir, "junit.xml"), rep, meta, s); err != nil {
		return err
	}
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	d := pageData{Meta: meta, Verdict: rep.Verdict, Stats: s, Duration: s.Duration.Round(time.Millisecond),
		CSS: template.CSS(css), JS: template.JS(js)}
	d.VerdictText = map[checker.Verdict]string{checker.Valid: "VALID: every checker passed",
		checker.Invalid: "INVALID: the lock broke", checker.Unknown: "UNKNOWN: a check did not finish"}[rep.Verdict]
	if s.Duration > 0 {
		d.OpsPerSec = float64(s.Ops) / s.Duration.Seconds()
	}
	if d.Sections, err = render(Sections(), &View{Meta: meta, Findings: rep, Ops: ops, Stats: s, HgrmFiles: hgrms}); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), b.Bytes(), 0o644)
}

func holdChart(s *Stats) template.HTML {
	return distribution("Hold time against the TTL", "ms", histValues(s.Hold), float64(s.TTL.Milliseconds()), "TTL")
}

// histValues are h's values in ms (a bucket's lower bound per count), at
// most 100,000 of them.
func histValues(h *hdrhistogram.Histogram) []float64 {
	var vals []float64
	for _, b := range h.Distribution() {
		for i := int64(0); i < b.Count && len(vals) < 100000; i++ {
			vals = append(vals, float64(b.From)/1000)
		}
	}
	return vals
}

// Drawn are the violations the report draws: the first DrawnViolations,
// checker by checker.
func Drawn(rep checker.Findings) []checker.Violation {
	var out []checker.Violation
	for _, c := range rep.Checkers {
		for _, v := range c.Violations {
			if len(out) == DrawnViolations {
				return out
			}
			out = append(out, v)
		}
	}
	return out
}

// OnTimeline says whether op is on the timeline of one of drawn: all the
// report needs of a history it does not hold whole.
func OnTimeline(drawn []checker.Violation) func(*history.Op) bool {
	return func(op *history.Op) bool {
		for _, v := range drawn {
			lo, hi := around(v.Window)
			if op.Key == v.Key && op.Return >= lo && op.Call <= hi {
				return true
			}
		}
		return false
	}
}

// around is the span a violation's timeline shows: its window widened by
// a quarter on each side.
func around(w [2]int64) (lo, hi int64) {
	pad := (w[1] - w[0]) / 4
	return w[0] - pad, w[1] + pad
}

// violations draws the window around each Drawn violation: one lane per
// client, the ops on its key, faults shaded. ops need hold only the ops
// OnTimeline.
func violations(rep checker.Findings, ops []history.Op, faults []checker.FaultWindow) ([]violationView, int) {
	var out []violationView
	total := 0
	byKey := map[string][]*history.Op{}
	for i := range ops {
		if ops[i].Key != "" {
			byKey[ops[i].Key] = append(byKey[ops[i].Key], &ops[i])
		}
	}
	for _, c := range rep.Checkers {
		total += c.ViolationCount
	}
	for _, c := range rep.Checkers {
		for _, v := range c.Violations {
			if len(out) == DrawnViolations {
				break
			}
			out = append(out, violationView{Checker: c.Name, V: v, Timeline: timeline(byKey[v.Key], v.Window, faults)})
		}
	}
	return out, total - len(out)
}

var opColor = map[history.Type]int{history.OK: 2, history.Fail: 1, history.Info: 3}

// timeline draws the ops of one key that overlap the window (widened by a
// quarter on each side), at most 60 lanes.
func timeline(ops []*history.Op, w [2]int64, faults []checker.FaultWindow) template.HTML {
	if len(ops) == 0 || w[1] <= w[0] {
		return ""
	}
	lo, hi := around(w)
	lanes := map[int]int{}
	var procs []int
	p := plot.New()
	p.Title.Text = "Ops on the key around the violation (green ok, red fail, orange info; writes thick)"
	p.X.Label.Text = "time (s)"
	type seg struct {
		op   *history.Op
		lane int
	}
	var segs []seg
	for _, op := range ops {
		if op.Return < lo || op.Call > hi {
			continue
		}
		l, ok := lanes[op.Process]
		if !ok {
			if len(lanes) == 60 {
				continue
			}
			l = len(lanes)
			lanes[op.Process] = l
			procs = append(procs, op.Process)
		}
		segs = append(segs, seg{op, l})
	}
	shadeFaults(p, faults, float64(lo)/1e9, float64(hi)/1e9, -0.5, float64(len(lanes))-0.5)
	for _, sg := range segs {
		x0, x1 := float64(max(sg.op.Call, lo))/1e9, float64(min(sg.op.Return, hi))/1e9
		if x1 <= x0 {
			x1 = x0 + 1e-4
		}
		y := float64(sg.lane)
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
		if err != nil {
			continue
		}
		l.Color = palette[opColor[sg.op.Type]]
		l.Width = vg.Points(3)
		if sg.op.F == history.Write {
			l.Width = vg.Points(8)
		}
		p.Add(l)
	}
	var ticks []plot.Tick
	for i, pr := range procs {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("p%d", pr)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(len(lanes))-0.5
	h := vg.Length(2+len(lanes)) * 0.45 * vg.Centimeter
	return svg(p, 18*vg.Centimeter, max(h, 5*vg.Centimeter))
}

// logs reads the last 200 lines of each node's log.
func logs(nodes map[string]string) []logView {
	var names []string
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []logView
	for _, n := range names {
		f, err := os.Open(nodes[n])
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if len(lines) > 400 {
				lines = lines[200:]
			}
		}
		f.Close()
		if len(lines) > 200 {
			lines = lines[len(lines)-200:]
		}
		out = append(out, logView{Name: n, Lines: len(lines), Text: strings.Join(lines, "\n")})
	}
	return out
}

// writeHgrm writes each series' histogram in the HdrHistogram text format
// (values in ms), as vegeta's hdrplot reporter does.
func writeHgrm(dir string, s *Stats) ([]string, error) {
	var files []string
	for _, se := range Series {
		h := s.Latency[se.Name]
		if h.TotalCount() == 0 {
			continue
		}
		name := "latency-" + se.Name + ".hgrm"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		_, err = h.PercentilesPrint(f, 5, 1000.0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitProblem `xml:"failure,omitempty"`
	Error   *junitProblem `xml:"error,omitempty"`
	Skipped *junitProblem `xml:"skipped,omitempty"`
	Out     string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one test case per checker; an invalid checker is a
// failure carrying its violations, an unknown one an error.
func writeJUnit(path string, rep checker.Findings, meta Meta, s *Stats) error {
	suite := junitSuite{Name: "lockcheck." + meta.Lock, Time: fmt.Sprintf("%.3f", s.Duration.Seconds())}
	for _, c := range rep.Checkers {
		tc := junitCase{Class: "lockcheck." + meta.Lock, Name: c.Name, Time: "0"}
		if d, err := time.ParseDuration(c.Elapsed); err == nil {
			tc.Time = fmt.Sprintf("%.3f", d.Seconds())
		}
		var lines []string
		for _, v := range c.Violations {
			lines = append(lines, v.Message)
		}
		if c.ViolationCount > len(c.Violations) {
			lines = append(lines, fmt.Sprintf("... %d more", c.ViolationCount-len(c.Violations)))
		}
		switch c.Verdict {
		case checker.Invalid:
			suite.Failures++
			msg := fmt.Sprintf("%d violation(s)", c.ViolationCount)
			if len(c.Violations) > 0 {
				msg += ": " + c.Violations[0].Message
			}
			tc.Failure = &junitProblem{Message: msg, Type: "invalid", Text: strings.Join(lines, "\n")}
		case checker.Unknown:
			suite.Errors++
			tc.Error = &junitProblem{Message: "unknown: " + c.Note, Type: "unknown", Text: strings.Join(c.UnknownKeys, "\n")}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	for _, t := range meta.Thresholds {
		tc := junitCase{Class: "lockcheck." + meta.Lock + ".thresholds", Name: t.Threshold, Time: "0"}
		if !t.Pass {
			suite.Failures++
			msg := fmt.Sprintf("threshold failed: %s (actual %g)", t.Threshold, t.Actual)
			if t.Error != "" {
				msg = "threshold failed: " + t.Threshold + ": " + t.Error
			}
			tc.Failure = &junitProblem{Message: msg, Type: "threshold"}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	return writeSuite(path, suite)
}

// writeSuite writes suite, its test count filled in, as a junit.xml.
func writeSuite(path string, suite junitSuite) error {
	suite.Tests = len(suite.Cases)
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{suite}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
