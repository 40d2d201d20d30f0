package harness

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// BenchConfig is a sweep: every lock × clients × keys cell is one bounded
// run on a fresh node.
type BenchConfig struct {
	Locks   []string
	Clients []int
	Keys    []int
	// Workload is the template of every cell (Clients and Keys are set per
	// cell); its Duration or Ops bounds a cell.
	Workload workload.Config
	Nemesis  nemesis.Config
	// Warmup is excluded from every cell's figures.
	Warmup time.Duration
	// Baseline runs redis-benchmark with SET NX PX and the release EVALSHA
	// on the cell's node, at the cell's concurrency, before the cell.
	Baseline bool
	// BaselineRequests per redis-benchmark command (0: 200 per client,
	// at least 200,000).
	BaselineRequests int
	OutDir           string
	Progress         io.Writer
}

// BenchCell is one cell's figures. Rates are per second after the warm-up;
// latencies in ms.
type BenchCell struct {
	Lock             string          `json:"lock"`
	Clients          int             `json:"clients"`
	Keys             int             `json:"keys"`
	Acquisitions     float64         `json:"acquisitions_per_sec"`
	CriticalSections float64         `json:"critical_sections_per_sec"`
	AcquireP50       float64         `json:"acquire_p50_ms"`
	AcquireP90       float64         `json:"acquire_p90_ms"`
	AcquireP99       float64         `json:"acquire_p99_ms"`
	AcquireP999      float64         `json:"acquire_p999_ms"`
	AcquireMax       float64         `json:"acquire_max_ms"`
	WaitP50          float64         `json:"wait_p50_ms"`
	WaitP99          float64         `json:"wait_p99_ms"`
	SuccessRatio     float64         `json:"success_ratio"`
	Jain             float64         `json:"jain"`
	Verdict          checker.Verdict `json:"verdict"`
	BaselineSet      float64         `json:"baseline_set_per_sec,omitempty"`
	BaselineRelease  float64         `json:"baseline_release_per_sec,omitempty"`
	BaselinePairs    float64         `json:"baseline_pairs_per_sec,omitempty"`
	Ratio            float64         `json:"ratio,omitempty"`
	PeakRSSMB        float64         `json:"peak_rss_mb"`
	Run              string          `json:"run"`
}

// PeakRSS returns this process's peak resident set size, in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// Bench runs the sweep and writes bench.json, bench.csv and bench.html in
// a new dir under OutDir/bench, which it returns.
func Bench(ctx context.Context, cfg BenchConfig) ([]BenchCell, string, error) {
	if len(cfg.Locks) == 0 || len(cfg.Clients) == 0 || len(cfg.Keys) == 0 {
		return nil, "", configErr(fmt.Errorf("bench needs at least one --lock, --clients and --keys"))
	}
	reg := lockimpl.Builtin()
	for _, l := range cfg.Locks {
		if _, err := reg.Lookup(l); err != nil {
			return nil, "", configErr(err)
		}
	}
	if cfg.Warmup < 0 {
		return nil, "", configErr(fmt.Errorf("--warmup must not be negative"))
	}
	dir, err := newRunDir(cfg.OutDir, "bench")
	if err != nil {
		return nil, "", err
	}
	var cells []BenchCell
	for _, clients := range cfg.Clients {
		for _, keys := range cfg.Keys {
			for _, lock := range cfg.Locks {
				if ctx.Err() != nil {
					break
				}
				cell, err := benchCell(ctx, cfg, dir, lock, clients, keys)
				if err != nil {
					return cells, dir, fmt.Errorf("cell %s clients=%d keys=%d: %w", lock, clients, keys, err)
				}
				cells = append(cells, cell)
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "%-12s clients %-6d keys %-8d %10.0f acquisitions/s  p99 %.3f ms  %s\n",
						lock, clients, keys, cell.Acquisitions, cell.AcquireP99, cell.Verdict)
				}
			}
		}
	}
	if err := writeBench(dir, cells); err != nil {
		return cells, dir, err
	}
	return cells, dir, ctx.Err()
}

func benchCell(ctx context.Context, cfg BenchConfig, dir, lock string, clients, keys int) (BenchCell, error) {
	cell := BenchCell{Lock: lock, Clients: clients, Keys: keys}
	logDir := filepath.Join(dir, "nodes", fmt.Sprintf("%s-c%d-k%d", lock, clients, keys))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return cell, err
	}
	cl, err := cluster.Up(ctx, cluster.Config{LogDir: logDir, MaxClients: 2*clients + 128})
	if err != nil {
		return cell, err
	}
	defer cl.Down()
	if cfg.Baseline {
		if err := baseline(ctx, cfg, cl, clients, &cell); err != nil {
			return cell, err
		}
	}
	w := cfg.Workload
	w.Clients, w.Keys = clients, keys
	res, err := Run(ctx, Config{Name: fmt.Sprintf("%s-c%d-k%d", lock, clients, keys), OutDir: filepath.Join(dir, "runs"),
		Lock: lock, Workload: w, Nemesis: cfg.Nemesis, Running: cl})
	if err != nil {
		return cell, err
	}
	cell.Run, cell.Verdict = res.Dir, res.Verdict
	ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		return cell, err
	}
	measure(ops, int64(cfg.Warmup), &cell)
	cell.PeakRSSMB = float64(PeakRSS()) / (1 << 20)
	return cell, nil
}

// measure fills a cell's figures from the ops that started after the warm-up.
func measure(ops []history.Op, warmup int64, cell *BenchCell) {
	var kept []history.Op
	var end int64
	acq := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	for _, op := range ops {
		end = max(end, op.Return)
		if op.Call < warmup || op.F == history.Nemesis {
			continue
		}
		kept = append(kept, op)
		if op.F == history.Acquire {
			_ = acq.RecordValue(min(max((op.Return-op.Call)/1000, 1), int64(time.Hour/time.Microsecond)))
		}
	}
	s := report.Compute(kept)
	secs := time.Duration(end - warmup).Seconds()
	if secs <= 0 {
		return
	}
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	cell.Acquisitions = float64(s.Acquisitions) / secs
	cell.CriticalSections = float64(s.Latency["write"].TotalCount()) / secs
	cell.AcquireP50, cell.AcquireP90, cell.AcquireP99 = ms(acq, 50), ms(acq, 90), ms(acq, 99)
	cell.AcquireP999, cell.AcquireMax = ms(acq, 99.9), ms(acq, 100)
	cell.WaitP50, cell.WaitP99 = ms(s.Wait, 50), ms(s.Wait, 99)
	cell.SuccessRatio, cell.Jain = s.SuccessRatio, s.Jain
	if cell.BaselinePairs > 0 {
		cell.Ratio = cell.Acquisitions / cell.BaselinePairs
	}
}

// baseline measures redis-benchmark with the commands of an acquire and a
// release at this concurrency on the cell's node, then empties it. An
// acquire+release pair costs one of each, so the pair rate is
// 1 / (1/SET + 1/EVALSHA).
func baseline(ctx context.Context, cfg BenchConfig, cl *cluster.Cluster, clients int, cell *BenchCell) error {
	n := cfg.BaselineRequests
	if n == 0 {
		n = max(200*clients, 200_000)
	}
	rc := redis.NewClient(&redis.Options{Addr: cl.Nodes[0].Addr, Password: cl.Password, Protocol: 2, DisableIdentity: true})
	defer rc.Close()
	sha, err := rc.ScriptLoad(ctx, lockimpl.ReleaseScriptSource).Result()
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	token := lockimpl.NewToken()
	ttl := fmt.Sprint(max(cfg.Workload.TTL, time.Second).Milliseconds())
	if cell.BaselineSet, err = cluster.Benchmark(ctx, cl.Nodes[0], cl.Password, clients, n,
		"SET", "lock:__rand_int__", token, "NX", "PX", ttl); err != nil {
		return err
	}
	if cell.BaselineRelease, err = cluster.Benchmark(ctx, cl.Nodes[0], cl.Password, clients, n,
		"EVALSHA", sha, "1", "lock:__rand_int__", token); err != nil {
		return err
	}
	cell.BaselinePairs = 1 / (1/cell.BaselineSet + 1/cell.BaselineRelease)
	return rc.FlushAll(ctx).Err()
}

// writeBench writes bench.json, bench.csv and bench.html.
func writeBench(dir string, cells []BenchCell) error {
	if err := writeJSON(filepath.Join(dir, "bench.json"), cells); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "bench.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"lock", "clients", "keys", "acquisitions_per_sec", "critical_sections_per_sec",
		"acquire_p50_ms", "acquire_p90_ms", "acquire_p99_ms", "acquire_p999_ms", "acquire_max_ms",
		"wait_p50_ms", "wait_p99_ms", "success_ratio", "jain", "verdict",
		"baseline_set_per_sec", "baseline_release_per_sec", "baseline_pairs_per_sec", "ratio", "peak_rss_mb", "run"})
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range cells {
		_ = w.Write([]string{c.Lock, strconv.Itoa(c.Clients), strconv.Itoa(c.Keys), g(c.Acquisitions), g(c.CriticalSections),
			g(c.AcquireP50), g(c.AcquireP90), g(c.AcquireP99), g(c.AcquireP999), g(c.AcquireMax),
			g(c.WaitP50), g(c.WaitP99), g(c.SuccessRatio), g(c.Jain), string(c.Verdict),
			g(c.BaselineSet), g(c.BaselineRelease), g(c.BaselinePairs), g(c.Ratio), g(c.PeakRSSMB), c.Run})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	var rows []report.BenchRow
	for _, c := range cells {
		rows = append(rows, report.BenchRow{Lock: c.Lock, Clients: c.Clients, Keys: c.Keys, Acquisitions: c.Acquisitions,
			CriticalSections: c.CriticalSections, P99: c.AcquireP99, SuccessRatio: c.SuccessRatio, Jain: c.Jain,
			Verdict: c.Verdict, BaselinePairs: c.BaselinePairs, Ratio: c.Ratio})
	}
	return report.WriteBench(filepath.Join(dir, "bench.html"), rows)
}
