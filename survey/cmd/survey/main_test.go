package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// TestArchive_WritesTheSamePage: the page written from the archive is the
// page written from the outputs it was copied from (verify rows, the
// violation of a break's run, a break's rerun, a skew point, the bench),
// and the archive holds no history.
func TestArchive_WritesTheSamePage(t *testing.T) {
	out, archive := t.TempDir(), filepath.Join(t.TempDir(), "data")
	put := func(rel string, v any) {
		t.Helper()
		p := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b, ok := v.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broke := report.VerifyRow{Scenario: "kill-none", Status: report.StatusFinding, Lease: checker.Valid, Mutex: checker.Invalid, Seeds: []int64{1}, Dir: "runs/kill-none/r1"}
	passed := report.VerifyRow{Scenario: "contention", Status: report.StatusPassed, Lease: checker.Valid, Mutex: checker.Valid, Seeds: []int64{1}, Dir: "runs/contention/r1"}
	viol := report.Results{Checkers: []checker.Result{{Name: "mutex", Verdict: checker.Invalid, Violations: []checker.Violation{{Message: "double holder on lock:7", Window: [2]int64{1, 2}}}}}}
	for _, lib := range []string{"setnx", "malkusch"} {
		for _, seed := range []string{"seed-1", "seed-2"} {
			d := filepath.Join(lib, seed)
			put(filepath.Join(d, "done"), []byte("0\n"))
			put(filepath.Join(d, "revision"), []byte("abc123\n"))
			put(filepath.Join(d, "verify", "20261127T000000", "verify.json"), report.Verify{Seed: 1, Rows: []report.VerifyRow{passed, broke}})
			put(filepath.Join(d, "verify", "20261127T000000", "runs", "kill-none", "r1", "results.json"), viol)
			put(filepath.Join(d, "verify", "20261127T000000", "runs", "kill-none", "r1", "history.jsonl"), []byte("{}\n"))
			if err := os.Symlink("20261127T000000", filepath.Join(out, d, "verify", "latest")); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("malkusch/repro-kill-none/done", []byte("1\n"))
	put("malkusch/repro-kill-none/elapsed", []byte("42s\n"))
	put("bench/done", []byte("0\n"))
	put("bench/bench/20261127T000000/bench.json", []report.BenchRow{{Lock: "setnx", Clients: 50, Keys: 10, Acquisitions: 1234, Verdict: checker.Valid}})
	page := func(dir string) string {
		t.Helper()
		w := filepath.Join(t.TempDir(), "survey.md")
		if err := run("", dir, w, "", true, false, ""); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := page(out)
	if err := run("", out, "", "", true, false, archive); err != nil {
		t.Fatal(err)
	}
	got := page(archive)
	stamp := func(p string) string { return p[strings.Index(p, "\n"):] } // the date line aside
	if stamp(got) != stamp(want) {
		t.Errorf("the page from the archive differs:\n%s\n--- from the outputs:\n%s", got, want)
	}
	for _, s := range []string{"double holder on lock:7", "Run again by the survey: exit 1 in 42s, broke again.", "1234/s"} {
		if !strings.Contains(got, s) {
			t.Errorf("the page from the archive lacks %q:\n%s", s, got)
		}
	}
	if err := filepath.Walk(archive, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasSuffix(p, ".jsonl") {
			t.Errorf("the archive holds a history: %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
