package report

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

const evilKey = `<script>alert(1)</script>`

// sample is a small history with a double holder on a key whose name is
// markup, a fault window, and a release that found its lease gone.
func sample() []history.Op {
	ms := int64(1_000_000)
	ops := []history.Op{
		{Process: 0, F: history.Acquire, Type: history.OK, Key: evilKey, Token: "a", TTLms: 100, Call: 0, Return: 1 * ms},
		{Process: 1, F: history.Acquire, Type: history.Fail, Key: evilKey, TTLms: 100, Call: 2 * ms, Return: 3 * ms},
		{Process: -1, F: history.Nemesis, Type: history.Info, Call: 5 * ms, Return: 5 * ms, Value: &history.NemesisValue{Fault: "pause-client", Phase: "start", Targets: []string{"p0"}}},
		{Process: 0, F: history.Write, Type: history.OK, Key: evilKey, Token: "a", Call: 2 * ms, Return: 150 * ms},
		{Process: 1, F: history.Acquire, Type: history.OK, Key: evilKey, Token: "b", TTLms: 100, Call: 110 * ms, Return: 111 * ms},
		{Process: 1, F: history.Write, Type: history.OK, Key: evilKey, Token: "b", Call: 112 * ms, Return: 160 * ms, CutShort: true},
		{Process: -1, F: history.Nemesis, Type: history.Info, Call: 170 * ms, Return: 170 * ms, Value: &history.NemesisValue{Fault: "pause-client", Phase: "stop", Targets: []string{"p0"}}},
		{Process: 0, F: history.Release, Type: history.Fail, Key: evilKey, Token: "a", Call: 180 * ms, Return: 181 * ms, Error: "lease not held"},
		{Process: 1, F: history.Release, Type: history.OK, Key: evilKey, Token: "b", Call: 190 * ms, Return: 191 * ms},
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

func write(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	ops := sample()
	rep := checker.Check(t.Context(), ops, checker.Options{OutDir: dir})
	logPath := filepath.Join(dir, "n1.log")
	os.WriteFile(logPath, []byte("1:M Ready to accept connections\n"+evilKey+"\nsee https://example.invalid/x\n"), 0o644)
	meta := Meta{Lock: "setnx", Redis: "7.0.15", Lockcheck: "test", Topology: "single",
		Command: "lockcheck run --lock setnx --seed 42", Config: `{"seed": 42}`, Nodes: map[string]string{"n1": logPath}}
	if err := Write(dir, ops, rep, meta); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

func TestWrite_Sections(t *testing.T) {
	_, page := write(t)
	for _, want := range []string{`id="reproduce"`, `id="checkers"`, `id="violations"`, `id="latency"`,
		`id="throughput"`, `id="contention"`, `id="leases"`, `id="nodes"`, `id="coverage"`,
		"lockcheck run --lock setnx --seed 42", "INVALID", "double holder", "<svg", "pause-client"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestWrite_FiguresMatchHistory: numbers on the page are the history's.
func TestWrite_FiguresMatchHistory(t *testing.T) {
	ops := sample()
	s := Compute(ops)
	if s.Acquisitions != 2 || s.AcquireAttempts != 3 || s.ReleaseGone != 1 || s.CutShort != 1 {
		t.Errorf("stats: %d acquisitions of %d attempts, %d releases gone, %d cut short; want 2 of 3, 1, 1", s.Acquisitions, s.AcquireAttempts, s.ReleaseGone, s.CutShort)
	}
	if sum := Summarize(ops, history.Unrecorded{Paused: 4}); sum.CutShort != 1 || sum.Paused != 4 || sum.Ops.Get(history.Acquire, "") != 3 || sum.Ops[history.Nemesis] != nil {
		t.Errorf("summary %+v: want 1 cut short, 4 paused, 3 acquires, no nemesis ops", sum)
	}
	if got := s.Latency["write"].TotalCount(); got != 2 {
		t.Errorf("write latencies: %d, want 2", got)
	}
	if len(s.Faults) != 1 || s.Faults[0].Stop != 170_000_000 {
		t.Errorf("fault windows %+v", s.Faults)
	}
	_, page := write(t)
	// Each figure in its own row, so a number elsewhere cannot stand in.
	for _, want := range []string{
		`<th>acquire attempts</th><td class="num">3</td>`,
		`<th>acquisitions</th><td class="num">2</td>`,
		`<th>success ratio</th><td class="num">0.667</td>`,
		`<th>releases that found the lease gone</th><td class="num">1</td>`,
		`<th>critical sections cut short at the lease deadline</th><td class="num">1 of 2 (50.0%)</td>`,
		// Holds 179 and 79 ms against a 100 ms TTL; 1.5 attempts each.
		`<th>holds longer than the TTL</th><td class="num">1 of 2</td>`,
		`<th>attempts per acquisition</th><td class="num">1.50</td>`,
		`<th>leases never released (skipped release, crashed holder)</th><td class="num">0</td>`,
		// Coverage: p0 wrote on after its lease expired and p1 acquired;
		// its release came late while p1 held the key; p1's first
		// acquire was refused; the pause began while p0 held a lease.
		`<td>stale_holder</td><td class="num">1</td>`,
		`<td>late_release_taken</td><td class="num">1</td>`,
		`<td>late_release_free</td><td class="num">0</td>`,
		`<td>contended</td><td class="num">1</td>`,
		`<td>pause-client</td><td class="num">1 / 1</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks figure %s", want)
		}
	}
}

func TestWrite_Escapes(t *testing.T) {
	_, page := write(t)
	if strings.Contains(page, evilKey) {
		t.Errorf("the key %s appears unescaped", evilKey)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the key is not shown as text")
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Errorf("%d <script> elements, want only the report's own", n)
	}
}

var external = regexp.MustCompile(`(?i)(src|href|xlink:href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import`)

// TestWrite_NoExternalURL: nothing in the page loads from a network. A URL
// may appear only as text inside a node's log.
func TestWrite_NoExternalURL(t *testing.T) {
	_, page := write(t)
	if m := external.FindString(page); m != "" {
		t.Errorf("page refers to the network: %q", m)
	}
	logs := regexp.MustCompile(`(?s)<pre>.*?</pre>`)
	if m := regexp.MustCompile(`https?://`).FindString(logs.ReplaceAllString(page, "")); m != "" {
		t.Errorf("page names a URL outside the node logs")
	}
}

func TestWrite_JUnitAndHgrm(t *testing.T) {
	dir, _ := write(t)
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var js junitSuites
	if err := xml.Unmarshal(b, &js); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	s := js.Suites[0]
	if s.Tests != 5 || s.Failures == 0 {
		t.Errorf("junit: %d tests, %d failures; want 5 checkers and a failure", s.Tests, s.Failures)
	}
	for _, c := range s.Cases {
		if c.Name == "mutex" && (c.Failure == nil || !strings.Contains(c.Failure.Message, "double holder")) {
			t.Errorf("mutex case: %+v", c)
		}
	}
	h, err := os.ReadFile(filepath.Join(dir, "latency-write.hgrm"))
	if err != nil || !strings.Contains(string(h), "Percentile\tTotalCount\t1/(1-Percentile)") || !strings.Contains(string(h), "Total count    =            2") {
		t.Errorf("latency-write.hgrm: %v\n%s", err, h)
	}
}

func TestWriteCompare(t *testing.T) {
	ops := sample()
	rep := checker.Check(t.Context(), ops, checker.Options{})
	path := filepath.Join(t.TempDir(), "compare.html")
	err := WriteCompare(path, Run{Dir: "before", Ops: ops, Findings: rep, Meta: Meta{Lock: "a"}},
		Run{Dir: "after", Ops: ops[:3], Findings: checker.Check(t.Context(), ops[:3], checker.Options{}), Meta: Meta{Lock: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"before", "after", "mutex violations", "<svg", "p99 before"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
}

// TestRender_AddedSection: a section is its Name, Template and Data; one
// added to the list is drawn from the same view, and a broken one is an
// error that names it.
func TestRender_AddedSection(t *testing.T) {
	ops := sample()
	v := &View{Ops: ops, Stats: Compute(ops)}
	extra := Section{Name: "writes", Template: `<p>{{.}} writes</p>`,
		Data: func(v *View) any { return v.Stats.Latency["write"].TotalCount() }}
	out, err := render(append(All()[:1], extra), v)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Name != "writes" || string(out[1].HTML) != "<p>2 writes</p>" {
		t.Errorf("got %+v, want the added section with the history's 2 writes", out)
	}
	if _, err := render([]Section{{Name: "broken", Template: "{{.Nope"}}, v); err == nil || !strings.Contains(err.Error(), "section broken") {
		t.Errorf("a broken template: got %v, want an error naming the section", err)
	}
}

// TestWrite_CoverageOfTheRun: the page's coverage table lists the
// figures the summary prints (coverageShown): a mutex's run shows none
// of a shape's figures, which its findings leave out, and its fault
// window's figure.
func TestWrite_CoverageOfTheRun(t *testing.T) {
	_, page := write(t)
	for _, absent := range []string{checker.AllPermitsTried, checker.ReaderTriedOverWriter, checker.WriterTriedOverReaders} {
		if strings.Contains(page, "<td>"+absent+"</td>") {
			t.Errorf("a mutex's page lists %s", absent)
		}
	}
	if !strings.Contains(page, `<td>pause-client</td><td class="num">1 / 1</td>`) {
		t.Errorf("the page lacks its fault window's hits")
	}
}
