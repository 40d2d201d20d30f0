package survey

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// TestWrite_Classifies: a break the reference lock shares stands with
// those of every lock without fencing, one it does not is the library's
// own, a pass at seed 1 that broke at seed 2 is a break, each n/a says
// why, and each break's command requires its scenario (exit 1); the
// libraries not surveyed and the findings outside the battery are listed;
// each break says what its command did when the survey ran it again, and
// the corrections to earlier pages close the page. A break of the
// library's own says the reference lock's cell there (a pass, or n/a and
// why), what its mechanism depends on, and its demonstration's command
// and last run, which the demonstrations' table lists too.
func TestWrite_Classifies(t *testing.T) {
	row := func(s, status string, lease, mutex checker.Verdict) report.VerifyRow {
		return report.VerifyRow{Scenario: s, Status: status, Lease: lease, Mutex: mutex, LeaseGated: true, Seeds: []int64{1}}
	}
	ref := &report.Verify{Seed: 1, Rows: []report.VerifyRow{row("kill-none", report.StatusFinding, checker.Valid, checker.Invalid),
		row("overrun", report.StatusPassed, checker.Valid, checker.Valid), row("contention", report.StatusPassed, checker.Valid, checker.Valid),
		{Scenario: "kill-quorum", Status: report.StatusNA, NA: "only for topology redlock"}}}
	lib := &report.Verify{Seed: 1, Rows: []report.VerifyRow{row("kill-none", report.StatusFinding, checker.Valid, checker.Invalid),
		row("overrun", report.StatusBroken, checker.Invalid, checker.Valid), row("contention", report.StatusPassed, checker.Valid, checker.Valid),
		{Scenario: "clock-quorum", Status: report.StatusNA, NA: "only for topology redlock"}, row("kill-quorum", report.StatusFinding, checker.Valid, checker.Invalid)}}
	// A mechanism with what it depends on and its demonstration, which ran.
	Mechanisms["lib overrun"] = Mechanism{Text: "its own.", Depends: "a TTL under a second"}
	demos := Demos
	Demos = append(slices.Clone(Demos), Demo{Name: "lib-demo", Cmd: []string{"x", "y z"}, Shows: []string{"lib overrun"}})
	t.Cleanup(func() { delete(Mechanisms, "lib overrun"); Demos = demos })
	broke2 := row("contention", report.StatusBroken, checker.Valid, checker.Invalid)
	broke2.Seeds = []int64{2}
	lib2 := &report.Verify{Seed: 2, Rows: []report.VerifyRow{broke2}}
	results := []Result{{Lib: Library{Name: "ref", Baseline: true}, Seed1: ref, Seed2: ref},
		{Lib: Library{Name: "lib", Flags: []string{"--lock-cmd", "x --y"}}, Seed1: lib, Seed2: lib2,
			Repro: map[string]Rerun{"overrun": {Exit: 1, Elapsed: "12s"}, "contention": {Exit: 0, Elapsed: "5m1s"}}}}
	var b strings.Builder
	if err := Write(&b, Meta{Bin: "lc", Demos: map[string]DemoRun{"lib-demo": {Exit: 1, Elapsed: "2s", Said: "shown", Output: "a\nshown\nexit status 1\n"}}}, results); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	own := page[strings.Index(page, "## Breaks particular"):strings.Index(page, "## Breaks every lock")]
	shared := page[strings.Index(page, "## Breaks every lock"):strings.Index(page, "## The demonstrations")]
	for _, want := range []struct{ in, text string }{
		{own, "### lib at `overrun`: lease broke"},
		{own, "### lib at `contention`: mutex broke"},
		{own, "### lib at `overrun`: lease broke\n\nThe reference lock at `overrun`: pass."},
		{own, "### lib at `kill-quorum`: mutex broke\n\nThe reference lock at `kill-quorum`: n/a (only for topology redlock)."},
		{own, "Depends on: a TTL under a second\n\nShown alone: `x \"y z\"` (lib-demo), exit 1 in 2s (the mechanism showed): \"shown\".\n\n"},
		{page[strings.Index(page, "## The demonstrations"):], "| lib-demo | `x \"y z\"` | lib overrun | no | exit 1 in 2s (the mechanism showed): \"shown\" |"},
		{own, "`lc verify --lock-cmd \"x --y\" --scenario overrun --require overrun --seed 1 --seeds 10`"},
		{own, "--scenario contention --require contention --seed 2 --seeds 10`"},
		{shared, "### lib at `kill-none`: mutex broke"},
		{page, "| lib | **broke: mutex** | **broke: lease** | pass (seed 1); **broke: mutex** (seed 2) | **broke: mutex** | n/a |"},
		{page, "- only for topology redlock: ref kill-quorum, lib clock-quorum."},
		{page[strings.Index(page, "## Other findings"):], "- **go-zero**: a data race in its circuit breaker"},
		{own, "--seed 1 --seeds 10`\n\nRun again by the survey: exit 1 in 12s, broke again."},
		{own, "--seed 2 --seeds 10`\n\nRun again by the survey: exit 0 in 5m1s, **not reproduced** (every battery held)."},
		{shared, "Run again by the survey: not yet."},
		{page, "Each break's command, run again by the survey: 2 of 4 run, 1 broke again (exit 1)."},
		{page[strings.Index(page, "## Corrections"):], "malkusch at `pause` and `overrun-free`"},
		{page[strings.Index(page, "Not surveyed, and why:"):strings.Index(page, "## Who keeps")], "PredisMutex"},
	} {
		if !strings.Contains(want.in, want.text) {
			t.Errorf("missing %q in:\n%s", want.text, want.in)
		}
	}
	if strings.Contains(own, "kill-none") || strings.Contains(shared, "overrun") {
		t.Errorf("a break in the wrong section:\n%s", page)
	}
}

// TestBenchCell: a library's speed cell gives its bare loop and
// lockcheck's ratio to it when the sweep measured one, and its verdict
// unless valid.
func TestBenchCell(t *testing.T) {
	got := benchCell(report.BenchRow{Acquisitions: 36701, AcquireP99: 14.2, Verdict: checker.Valid, BareLoop: 37000, BareRatio: 0.99})
	if want := "36701/s, p99 14.2 ms; bare loop 37000/s, 0.99x"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
	if got := benchCell(report.BenchRow{Acquisitions: 10, AcquireP99: 1, Verdict: checker.Unknown}); got != "10/s, p99 1.0 ms (unknown)" {
		t.Errorf("cell without a bare loop %q", got)
	}
}

// TestWrite_ShapeTables: each shape has a table of its own, after the
// mutexes', with its libraries' rows and the scenarios their batteries
// ran; a library of a shape is in no other table, and a scenario only a
// shape ran is no column of the mutex table.
func TestWrite_ShapeTables(t *testing.T) {
	row := func(s, status string) report.VerifyRow {
		return report.VerifyRow{Scenario: s, Status: status, Lease: checker.Valid, Mutex: checker.Valid, Seeds: []int64{1}}
	}
	mutex := &report.Verify{Seed: 1, Rows: []report.VerifyRow{row("contention", report.StatusPassed)}}
	sem := &report.Verify{Seed: 1, Rows: []report.VerifyRow{row("contention", report.StatusPassed), row("client-clock", report.StatusPassed)}}
	broke := row("contention", report.StatusFinding)
	broke.Mutex = checker.Invalid
	rw := &report.Verify{Seed: 1, Rows: []report.VerifyRow{broke}}
	results := []Result{{Lib: Library{Name: "ref", Baseline: true}, Seed1: mutex, Seed2: mutex},
		{Lib: Library{Name: "sem", Kind: Semaphore}, Seed1: sem, Seed2: sem},
		{Lib: Library{Name: "rw", Kind: ReadWrite}, Seed1: rw}}
	var b strings.Builder
	if err := Write(&b, Meta{Bin: "lc"}, results); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	section := func(title string) string {
		t.Helper()
		i := strings.Index(page, "## "+title+"\n")
		if i < 0 {
			t.Fatalf("no table %q in:\n%s", title, page)
		}
		end := strings.Index(page[i:], "\n\n|")
		rest := page[i+end+2:]
		return page[i : i+end+2+strings.Index(rest, "\n\n")]
	}
	mt, st, rt := section(Kinds[0].Title), section(Kinds[1].Title), section(Kinds[2].Title)
	for _, want := range []struct{ in, text string }{
		{mt, "| library | contention |\n|---|---|\n| ref | pass |"},
		{st, "`--permits 3`"},
		{st, "| library | contention | client-clock |\n|---|---|---|\n| sem | pass | pass |"},
		{rt, "`--readers 0.5`"},
		{rt, "| library | contention |\n|---|---|\n| rw | **broke: mutex** |"},
	} {
		if !strings.Contains(want.in, want.text) {
			t.Errorf("missing %q in:\n%s", want.text, want.in)
		}
	}
	if strings.Contains(mt, "sem") || strings.Contains(mt, "| rw") || strings.Contains(st, "| ref") || strings.Contains(rt, "| sem") {
		t.Errorf("a library in another shape's table:\n%s\n%s\n%s", mt, st, rt)
	}
	if i, j := strings.Index(page, Kinds[0].Title), strings.Index(page, Kinds[1].Title); i > j {
		t.Errorf("the semaphores' table before the mutexes'")
	}
}

// TestDoc_ShapeTablesGenerated: docs/survey.md holds each shape's table
// exactly as Write makes it from the archives in survey/data (its
// libraries' verify.json at seeds 1 and 2): a table missing, a cell typed
// or a row without its archive fails.
func TestDoc_ShapeTablesGenerated(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "survey.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(lib, seed string) *report.Verify {
		b, err := os.ReadFile(filepath.Join("data", lib, seed, "verify", "latest", "verify.json"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var v report.Verify
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %v", lib, seed, err)
		}
		return &v
	}
	for _, k := range Kinds[1:] {
		var results []Result
		for _, lib := range Libraries {
			if lib.Kind != k.Kind {
				continue
			}
			r := Result{Lib: lib, Seed1: read(lib.Name, "seed-1"), Seed2: read(lib.Name, "seed-2")}
			if r.Seed1 == nil {
				t.Errorf("%s (%s): no archive at seed 1 (survey/data/%s/seed-1)", lib.Name, k.Kind, lib.Name)
			}
			results = append(results, r)
		}
		if len(results) == 0 {
			t.Errorf("no library of the survey is a %s", k.Kind)
			continue
		}
		var b strings.Builder
		writeTable(&b, k.Kind, k.Title, results)
		if b.Len() == 0 || !strings.Contains(string(page), b.String()) {
			t.Errorf("docs/survey.md does not hold the %s table its archives make (make survey-page):\n%s", k.Kind, b.String())
		}
	}
}
