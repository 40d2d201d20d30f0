package report

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
	// Agents is set for a run whose clients were on agents.
	Agents []RunAgent
	// Thresholds are the run's --threshold results (a JUnit case each).
	Thresholds []ThresholdResult
	// Retry is the clients' retry policy; TTLFactor the p99 rule's
	// factor of the TTL advice.
	Retry     string
	TTLFactor float64
	// Unrecorded are what the clients counted besides the history.
	Unrecorded history.Unrecorded
	// KeysAtResource are a shape's keys beyond the mutex as the resource
	// saw them (Results.KeysAtResource); none: no "resource" section.
	KeysAtResource []checker.KeyPeak
}

// DrawnViolations caps the violations the page draws a timeline for, of
// the up to checker.MaxViolations each checker keeps (the rest are listed
// by count).
const DrawnViolations = 20

var page = template.Must(template.ParseFS(assets, "assets/report.html.tmpl"))

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
	if d.Sections, err = render(All(), &View{Meta: meta, Findings: rep, Ops: ops, Stats: s, HgrmFiles: hgrms}); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), b.Bytes(), 0o644)
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
