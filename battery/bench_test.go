package battery_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/battery"
	"github.com/lockcheck/lockcheck/report"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/workload"
)

// TestBench_Sweep: 2 locks × 3 client counts, with the redis-benchmark
// baseline and the bare-loop one (each lock's own code in a loop of the
// cell's clients, no history); every cell measured, all three outputs written, and bench.html
// opens in a browser without errors. Its warm-up is long enough to tune
// the clients' GOMAXPROCS: each cell says what it chose, and the process
// has its own back after.
// TestBench_Rounds: with Rounds, a cell runs and its bare loop runs in
// turn that many times, each round's run kept, and the cell's ratio to
// the bare loop is the median of the rounds'.
func TestBench_Rounds(t *testing.T) {
	testutil.RequireRedis(t)
	cells, dir, err := battery.Bench(context.Background(), battery.BenchConfig{Locks: []string{"setnx"}, Clients: []int{10}, Keys: []int{1000},
		Workload: workload.Config{Duration: time.Second, TTL: time.Second, HoldDist: workload.HoldFixed, Retry: workload.RetryNone},
		Warmup:   300 * time.Millisecond, Baseline: true, BaselineRequests: 20000, Rounds: 3, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.NoRedisChildren(t)
	if len(cells) != 1 {
		t.Fatalf("%d cells, want 1", len(cells))
	}
	c := cells[0]
	if c.Rounds != 3 || len(c.BareRatios) != 3 {
		t.Fatalf("rounds %d, ratios %v; want 3 of each", c.Rounds, c.BareRatios)
	}
	if s := slices.Sorted(slices.Values(c.BareRatios)); c.BareRatio != s[1] || c.BareRatio <= 0 {
		t.Errorf("bare ratio %.3f, want the median of %v", c.BareRatio, c.BareRatios)
	}
	if len(c.RunRates) != 3 || len(c.BareRates) != 3 {
		t.Fatalf("rounds' rates %v and bare loops' %v: want three of each", c.RunRates, c.BareRates)
	}
	if run, bare := slices.Sorted(slices.Values(c.RunRates))[1], slices.Sorted(slices.Values(c.BareRates))[1]; c.Acquisitions != run || c.BareLoop != bare {
		t.Errorf("cell %.0f/s, bare loop %.0f/s: want the medians of %v and %v", c.Acquisitions, c.BareLoop, c.RunRates, c.BareRates)
	}
	for i := range min(len(c.RunRates), len(c.BareRates), len(c.BareRatios)) {
		if r := c.RunRates[i] / c.BareRates[i]; math.Abs(r-c.BareRatios[i]) > 1e-9 {
			t.Errorf("round %d: %.0f/s over its bare loop's %.0f/s is %.3f, its ratio %.3f", i+1, c.RunRates[i], c.BareRates[i], r, c.BareRatios[i])
		}
	}
	runs, err := filepath.Glob(filepath.Join(dir, "runs", "setnx-c10-k1000*"))
	if err != nil || len(runs) != 3 {
		t.Errorf("run dirs %v (%v), want one a round", runs, err)
	}
}

func TestBench_Sweep(t *testing.T) {
	testutil.RequireRedis(t)
	procs := runtime.GOMAXPROCS(0)
	var ratios []report.Threshold
	for _, e := range []string{"bare_ratio>=0.01", "bare_ratio>=100", "baseline_ratio>0"} {
		th, err := report.ParseThreshold(e)
		if err != nil {
			t.Fatal(err)
		}
		ratios = append(ratios, th)
	}
	cells, dir, err := battery.Bench(context.Background(), battery.BenchConfig{Thresholds: ratios,
		Locks: []string{"setnx", "watchdog"}, Clients: []int{5, 10, 20}, Keys: []int{1000},
		Workload: workload.Config{Duration: 1500 * time.Millisecond, TTL: time.Second, HoldDist: workload.HoldFixed, Retry: workload.RetryNone},
		Warmup:   500 * time.Millisecond, Baseline: true, BaselineRequests: 20000, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.NoRedisChildren(t)
	if len(cells) != 6 {
		t.Fatalf("got %d cells, want 6", len(cells))
	}
	for _, c := range cells {
		if c.Acquisitions <= 0 || c.BaselinePairs <= 0 || c.Ratio <= 0 || c.BareLoop <= 0 || c.BareRatio <= 0 || c.AcquireP99 <= 0 || c.Verdict != checker.Valid {
			t.Errorf("cell %s/%d: %+v", c.Lock, c.Clients, c)
		}
		// Gated on the ratios, after the baselines: only the one no
		// cell can meet fails, in every cell.
		if len(c.RatiosFailed) != 1 || !strings.HasPrefix(c.RatiosFailed[0], "bare_ratio>=100") || c.ThresholdsFailed < 1 {
			t.Errorf("cell %s/%d: ratio thresholds failed %v (%d thresholds failed), want bare_ratio>=100 alone", c.Lock, c.Clients, c.RatiosFailed, c.ThresholdsFailed)
		}
		if c.Procs != 1 && c.Procs != procs {
			t.Errorf("cell %s/%d: clients ran at GOMAXPROCS %d, want 1 or %d", c.Lock, c.Clients, c.Procs, procs)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the sweep, want %d back", got, procs)
	}
	var fromJSON []report.BenchRow
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil || json.Unmarshal(b, &fromJSON) != nil || len(fromJSON) != 6 {
		t.Errorf("bench.json: %v, %d cells", err, len(fromJSON))
	}
	f, err := os.Open(filepath.Join(dir, "bench.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 7 || rows[0][0] != "lock" {
		t.Fatalf("bench.csv: %v, %d rows", err, len(rows))
	}
	// A list is its elements, not Go's name for its type.
	if col := slices.Index(rows[0], "ratios_failed"); col < 0 || !strings.HasPrefix(rows[1][col], "bare_ratio>=100") {
		t.Errorf("bench.csv's ratios_failed column (%d): %q, want the failed threshold", col, rows[1][max(col, 0)])
	}
	page, err := os.ReadFile(filepath.Join(dir, "bench.html"))
	if err != nil || strings.Count(string(page), "<svg") != 2 || strings.Contains(string(page), "http") {
		t.Errorf("bench.html: %v; want two charts and no URL", err)
	}
	if chromium := chromiumOrSkip(t); chromium != "" {
		p := testutil.Browse(t, chromium, filepath.Join(dir, "bench.html"))
		if len(p.JSErrors) > 0 || testutil.Blank(p.Screenshot) || !strings.Contains(p.DOM, `data-rendered="yes"`) {
			t.Errorf("bench.html in a browser: errors %q, blank %v", p.JSErrors, testutil.Blank(p.Screenshot))
		}
	}
}

// chromiumOrSkip returns the browser when it is installed (or required),
// and "" otherwise, so the rest of a test still runs without it.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	if os.Getenv("LOCKCHECK_REQUIRE_CHROMIUM") != "" {
		return testutil.Chromium(t)
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if _, err := os.Stat("/usr/bin/" + n); err == nil {
			return testutil.Chromium(t)
		}
	}
	t.Log("chromium not installed: bench.html not opened in a browser")
	return ""
}

// TestBench_RetrySweep: three retry policies side by side in one sweep:
// a cell each, named by its policy, with the figures that tell them apart.
func TestBench_RetrySweep(t *testing.T) {
	testutil.RequireRedis(t)
	cells, _, err := battery.Bench(context.Background(), battery.BenchConfig{
		Locks: []string{"setnx"}, Clients: []int{50}, Keys: []int{2}, Retries: []string{"none", "fixed:5ms", "backoff:5ms,100ms,4"},
		Workload: workload.Config{Duration: 2 * time.Second, TTL: time.Second, Hold: 5 * time.Millisecond, HoldDist: workload.HoldFixed},
		Warmup:   300 * time.Millisecond, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.NoRedisChildren(t)
	if len(cells) != 3 {
		t.Fatalf("%d cells, want 3", len(cells))
	}
	for i, want := range []string{"none", "fixed:5ms", "backoff:5ms,100ms,4"} {
		c := cells[i]
		t.Logf("%s: %.0f acq/s, wait p99 %.1f ms, %.2f attempts/acq, %d give-ups, jain %.3f", c.Retry, c.Acquisitions, c.WaitP99, c.AttemptsPerAcquisition, c.GiveUps, c.Jain)
		if c.Retry != want || c.Verdict != checker.Valid || c.Acquisitions <= 0 || c.AttemptsPerAcquisition < 1 {
			t.Errorf("cell %d: %+v, want retry %s, valid, with acquisitions", i, c, want)
		}
	}
	// 50 clients on 2 keys: a client with one attempt gives up often, one
	// that retries until it acquires never does.
	if cells[0].GiveUps == 0 || cells[1].GiveUps != 0 {
		t.Errorf("give-ups: none %d (want some), fixed:5ms %d (want none)", cells[0].GiveUps, cells[1].GiveUps)
	}
}
