package report_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// TestReport_InBrowser opens report.html from a real run in headless
// Chromium: the page renders (a screenshot that is not blank), its script
// runs, and it raises no JavaScript error. The detector is proven first on
// a page with a deliberate error.
func TestReport_InBrowser(t *testing.T) {
	chromium := testutil.Chromium(t)
	testutil.RequireRedis(t)

	bad := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(bad, []byte(`<html><body><p>x</p><script>noSuchFunction()</script></body></html>`), 0o644)
	if p := testutil.Browse(t, chromium, bad); len(p.JSErrors) == 0 {
		t.Fatal("a page with a JavaScript error showed none: the detector is blind")
	}
	blank := filepath.Join(t.TempDir(), "blank.html")
	os.WriteFile(blank, []byte(`<html><body></body></html>`), 0o644)
	if p := testutil.Browse(t, chromium, blank); !testutil.Blank(p.Screenshot) {
		t.Fatal("an empty page is not blank: the blank check is blind")
	}

	res, err := harness.Run(context.Background(), harness.Config{Lock: "broken-check-then-set", OutDir: t.TempDir(),
		Workload: workload.Config{Clients: 50, Keys: 3, Duration: 3 * time.Second, TTL: 200 * time.Millisecond, Hold: 50 * time.Millisecond},
		Nemesis:  nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: 500 * time.Millisecond},
		Check:    checker.Options{ClockTolerance: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	page := testutil.Browse(t, chromium, filepath.Join(res.Dir, "report.html"))
	if len(page.JSErrors) > 0 {
		t.Errorf("report.html raised JavaScript errors: %q", page.JSErrors)
	}
	if testutil.Blank(page.Screenshot) {
		t.Error("report.html renders blank")
	}
	if !strings.Contains(page.DOM, `data-rendered="yes"`) {
		t.Error("report.html's script did not run")
	}
	if !strings.Contains(page.DOM, "<svg") || !strings.Contains(page.DOM, "double holder") {
		t.Error("report.html lacks its charts or its violations")
	}
	for _, f := range []string{"junit.xml", "latency-acquire-ok.hgrm", "results.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Error(err)
		}
	}
}
