package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// BenchRow is one cell of a lockcheck bench sweep: bench.json, bench.csv
// (its columns are the json names, in order) and bench.html are written
// from it. Rates are per second after the warm-up; latencies in ms.
type BenchRow struct {
	Lock    string `json:"lock"`
	Clients int    `json:"clients"`
	Keys    int    `json:"keys"`
	// Agents is the cell's agent processes (0: clients in process).
	Agents           int     `json:"agents,omitempty"`
	Retry            string  `json:"retry"`
	Acquisitions     float64 `json:"acquisitions_per_sec"`
	CriticalSections float64 `json:"critical_sections_per_sec"`
	AcquireP50       float64 `json:"acquire_p50_ms"`
	AcquireP90       float64 `json:"acquire_p90_ms"`
	AcquireP99       float64 `json:"acquire_p99_ms"`
	AcquireP999      float64 `json:"acquire_p999_ms"`
	AcquireMax       float64 `json:"acquire_max_ms"`
	WaitP50          float64 `json:"wait_p50_ms"`
	WaitP99          float64 `json:"wait_p99_ms"`
	SuccessRatio     float64 `json:"success_ratio"`
	Jain             float64 `json:"jain"`
	// AttemptsPerAcquisition is acquire attempts over acquisitions;
	// GiveUps the acquisitions abandoned after the last retry (whole run).
	AttemptsPerAcquisition float64         `json:"attempts_per_acquisition"`
	GiveUps                int64           `json:"give_ups"`
	Verdict                checker.Verdict `json:"verdict"`
	BaselineSet            float64         `json:"baseline_set_per_sec,omitempty"`
	BaselineRelease        float64         `json:"baseline_release_per_sec,omitempty"`
	BaselinePairs          float64         `json:"baseline_pairs_per_sec,omitempty"`
	Ratio                  float64         `json:"ratio,omitempty"`
	// BareLoop is the lock's acquisitions/s in a bare loop of the cell's
	// clients (no history, no resource, no checks), BareRatio the cell's
	// acquisitions/s over it: what lockcheck costs the lock.
	BareLoop  float64 `json:"bare_loop_per_sec,omitempty"`
	BareRatio float64 `json:"bare_ratio,omitempty"`
	// Rounds is how many times the cell's run and its bare loop ran in
	// turn (battery.BenchConfig.Rounds): Acquisitions, BareLoop and
	// BareRatio are then the medians of the rounds'.
	Rounds int `json:"rounds,omitempty"`
	// BareRatios are each round's ratio, in the order run, and RunRates
	// and BareRates the two rates it is of.
	BareRatios []float64 `json:"bare_ratios,omitempty"`
	RunRates   []float64 `json:"run_rates,omitempty"`
	BareRates  []float64 `json:"bare_rates,omitempty"`
	PeakRSSMB  float64   `json:"peak_rss_mb"`
	// Procs is the GOMAXPROCS the clients ran at after the warm-up, which
	// chose it (harness.Config.TuneProcs).
	Procs int `json:"procs"`
	// ThresholdsFailed counts the cell's failed --thresholds (judged on
	// its whole run, warm-up included, as run judges them).
	ThresholdsFailed int `json:"thresholds_failed"`
	// RatiosFailed are the cell's failed thresholds on its ratios
	// (baseline_ratio, bare_ratio), judged after its baselines; each is
	// counted in ThresholdsFailed too.
	RatiosFailed []string `json:"ratios_failed,omitempty"`
	Run          string   `json:"run"`
}

var benchPage = template.Must(template.ParseFS(assets, "assets/bench.html.tmpl"))

// Measure fills the row's figures from the ops of the history at path
// called at or after from (the clients' start plus the warm-up, on the
// history's clock: harness.Result.Started), read in one streaming pass: a
// cell holds its figures, not its history. Its rate is taken over a
// Window, as the cell's bare loop's is.
func (r *BenchRow) Measure(path string, from time.Duration) error {
	s := NewStats()
	win := Window{From: from}
	err := history.ScanFile(path, func(batch []history.Op) error {
		for i := range batch {
			op := &batch[i]
			if op.F == history.Nemesis {
				continue
			}
			win.Op(time.Duration(op.Call), time.Duration(op.Return), op.F == history.Acquire && op.Type == history.OK)
			if op.Call >= int64(from) {
				s.Add(op)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Finish()
	secs := win.Seconds()
	if secs <= 0 {
		return nil
	}
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	r.Acquisitions = win.Rate()
	r.CriticalSections = float64(s.Latency["write"].TotalCount()) / secs
	r.AcquireP50, r.AcquireP90, r.AcquireP99 = ms(s.Acquire, 50), ms(s.Acquire, 90), ms(s.Acquire, 99)
	r.AcquireP999, r.AcquireMax = ms(s.Acquire, 99.9), ms(s.Acquire, 100)
	r.WaitP50, r.WaitP99 = ms(s.Wait, 50), ms(s.Wait, 99)
	r.SuccessRatio, r.Jain = s.SuccessRatio, s.Jain
	if s.Acquisitions > 0 {
		r.AttemptsPerAcquisition = float64(s.AcquireAttempts) / float64(s.Acquisitions)
	}
	if r.BaselinePairs > 0 {
		r.Ratio = r.Acquisitions / r.BaselinePairs
	}
	return nil
}

// Window is the span a bench rate is taken over, one rule for a cell's
// run (Measure) and its bare loop, so that their ratio compares the
// same thing: the acquisitions called at or after From (the clients'
// start plus the warm-up), over the span from From to the last client
// op's return. Times are from the clients' clock's zero.
type Window struct {
	From     time.Duration
	Acquired int64
	End      time.Duration
}

// Op counts one client op, called at call and returned at ret; acquired
// says it was an acquire that took the lock.
func (w *Window) Op(call, ret time.Duration, acquired bool) {
	w.End = max(w.End, ret)
	if acquired && call >= w.From {
		w.Acquired++
	}
}

// Merge adds o, a window of the same From (another client's).
func (w *Window) Merge(o Window) {
	w.End = max(w.End, o.End)
	w.Acquired += o.Acquired
}

// Seconds is the window's length (0 or less: nothing ran after From).
func (w Window) Seconds() float64 { return (w.End - w.From).Seconds() }

// Rate is the acquisitions a second over the window (0 if it is empty).
func (w Window) Rate() float64 {
	if secs := w.Seconds(); secs > 0 {
		return float64(w.Acquired) / secs
	}
	return 0
}

// WriteBench writes bench.json, bench.csv and bench.html into dir.
func WriteBench(dir string, rows []BenchRow) error {
	if err := writeJSON(filepath.Join(dir, "bench.json"), rows); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "bench.csv"), rows); err != nil {
		return err
	}
	return writeBenchPage(filepath.Join(dir, "bench.html"), rows)
}

// writeCSV writes rows with a header of their json names, in field order,
// so that the columns are bench.json's.
func writeCSV[T any](path string, rows []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	t := reflect.TypeFor[T]()
	var header []string
	for i := range t.NumField() {
		header = append(header, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	_ = w.Write(header)
	for _, r := range rows {
		v := reflect.ValueOf(r)
		rec := make([]string, v.NumField())
		for i := range rec {
			rec[i] = csvField(v.Field(i))
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

// csvField is f as a CSV field; a list's elements are joined by ";".
func csvField(f reflect.Value) string {
	switch f.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'f', -1, 64)
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10)
	case reflect.Slice:
		parts := make([]string, f.Len())
		for i := range parts {
			parts[i] = csvField(f.Index(i))
		}
		return strings.Join(parts, ";")
	default:
		return f.String()
	}
}

// writeBenchPage writes bench.html: the table, and throughput and p99
// acquire latency against clients, one line per lock and key count.
func writeBenchPage(path string, rows []BenchRow) error {
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	var b bytes.Buffer
	err := benchPage.Execute(&b, map[string]any{
		"Rows":       rows,
		"Throughput": againstClients(rows, "Acquisitions per second", "acquisitions/s", func(r BenchRow) float64 { return r.Acquisitions }),
		"P99":        againstClients(rows, "p99 acquire latency", "ms", func(r BenchRow) float64 { return r.AcquireP99 }),
		"CSS":        template.CSS(css), "JS": template.JS(js),
	})
	if err != nil {
		return fmt.Errorf("bench page: %w", err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func againstClients(rows []BenchRow, title, ylabel string, y func(BenchRow) float64) template.HTML {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "clients", ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	series := map[string]plotter.XYs{}
	var names []string
	retries := map[string]bool{}
	for _, r := range rows {
		retries[r.Retry] = true
	}
	for _, r := range rows {
		name := r.Lock + ", keys " + strconv.Itoa(r.Keys)
		if len(retries) > 1 {
			name += ", retry " + r.Retry
		}
		if _, ok := series[name]; !ok {
			names = append(names, name)
		}
		series[name] = append(series[name], plotter.XY{X: float64(r.Clients), Y: y(r)})
	}
	for i, name := range names {
		xys := series[name]
		sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue
		}
		l.Color, pts.Color = palette[i%len(palette)], palette[i%len(palette)]
		p.Add(l, pts)
		p.Legend.Add(name, l)
	}
	p.Y.Min = 0
	return svg(p, 16*vg.Centimeter, 9*vg.Centimeter)
}
