package battery

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockcheck/lockcheck/agent"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// BenchConfig is a sweep: every lock × clients × keys cell is one bounded
// run on a fresh node.
type BenchConfig struct {
	Locks []string
	// Registry has the locks (nil: lockimpl.All()); a user's specs
	// and lock processes are registered there.
	Registry *lockimpl.Registry
	Clients  []int
	Keys     []int
	// Agents are the agent counts to sweep (0: the clients in this
	// process), each agent a process of AgentBinary on this machine.
	Agents      []int
	AgentBinary string
	// Retries are the retry policies to sweep (workload.ParseRetry; none:
	// the Workload's).
	Retries []string
	// Workload is the template of every cell (Clients and Keys are set per
	// cell); its Duration or Ops bounds a cell.
	Workload workload.Config
	Nemesis  nemesis.Config
	// Warmup is excluded from every cell's figures.
	Warmup time.Duration
	// Baseline runs redis-benchmark with SET NX PX and the release EVALSHA
	// on the cell's node, at the cell's concurrency, before the cell, and
	// the lock itself in a bare loop of the cell's clients after it
	// (bareLoop).
	Baseline bool
	// BaselineRequests per redis-benchmark command (0: 200 per client,
	// at least 200,000).
	BaselineRequests int
	// Rounds, with Baseline, alternates the cell's run and its bare loop
	// this many times (0 or 1: once), each for the cell's duration: the
	// cell reports the median of its runs' rates, of its bare loops', and
	// of each round's ratio, so that a shared machine's swings fall on
	// both sides of a round alike. Its other figures are its first run's.
	Rounds int
	// Cluster is where the cells run: a local single node each (the
	// default), or an external Redis (Backend external, External), under
	// the key prefix lockcheck:bench-<dir>: unless one is given.
	Cluster cluster.Config
	// Thresholds are judged on each cell's run (Config.Thresholds).
	Thresholds []report.Threshold
	OutDir     string
	Progress   io.Writer
}

// Bench runs the sweep and writes bench.json, bench.csv and bench.html in
// a new dir under OutDir/bench, which it returns.
func Bench(ctx context.Context, cfg BenchConfig) ([]report.BenchRow, string, error) {
	if len(cfg.Locks) == 0 || len(cfg.Clients) == 0 || len(cfg.Keys) == 0 {
		return nil, "", workload.ConfigErr(fmt.Errorf("bench needs at least one --lock, --clients and --keys"))
	}
	if cfg.Registry == nil {
		cfg.Registry = lockimpl.All()
	}
	if err := checkLocks(cfg.Registry, cfg.Locks, []time.Duration{cfg.Workload.TTL}); err != nil {
		return nil, "", err
	}
	if cfg.Warmup < 0 {
		return nil, "", workload.ConfigErr(fmt.Errorf("--warmup must not be negative"))
	}
	if cfg.Cluster.Backend == cluster.External && cfg.Baseline {
		return nil, "", workload.ConfigErr(fmt.Errorf("--baseline runs redis-benchmark, whose keys are not under a prefix: not on an external Redis"))
	}
	dir, err := harness.NewRunDir(cfg.OutDir, "bench")
	if err != nil {
		return nil, "", err
	}
	retries := cfg.Retries
	if len(retries) == 0 {
		retries = []string{cfg.Workload.Retry}
	}
	for _, r := range retries {
		if _, err := workload.ParseRetry(r, cfg.Workload.RetryJitter); err != nil {
			return nil, "", workload.ConfigErr(err)
		}
	}
	agents := cfg.Agents
	if len(agents) == 0 {
		agents = []int{0}
	}
	var cells []report.BenchRow
	for _, clients := range cfg.Clients {
		for _, keys := range cfg.Keys {
			for _, retry := range retries {
				for _, n := range agents {
					for _, lock := range cfg.Locks {
						if ctx.Err() != nil {
							break
						}
						cell, err := benchCell(ctx, cfg, dir, benchAxes{lock, clients, keys, retry, n})
						if err != nil {
							return cells, dir, fmt.Errorf("cell %s clients=%d keys=%d retry=%s agents=%d: %w", lock, clients, keys, retry, n, err)
						}
						cells = append(cells, cell)
						report.TextBenchRow(cfg.Progress, cell, len(retries) > 1)
					}
				}
			}
		}
	}
	if err := report.WriteBench(dir, cells); err != nil {
		return cells, dir, err
	}
	return cells, dir, ctx.Err()
}

// benchAxes are one cell's coordinates in the sweep.
type benchAxes struct {
	lock          string
	clients, keys int
	retry         string
	agents        int
}

func benchCell(ctx context.Context, cfg BenchConfig, dir string, a benchAxes) (report.BenchRow, error) {
	lock, clients, keys, retry := a.lock, a.clients, a.keys, a.retry
	cell := report.BenchRow{Lock: lock, Clients: clients, Keys: keys, Agents: a.agents}
	name := fmt.Sprintf("%s-c%d-k%d", lock, clients, keys)
	if len(cfg.Retries) > 1 {
		name += "-" + retryName(retry)
	}
	if a.agents > 0 {
		name += fmt.Sprintf("-a%d", a.agents)
	}
	logDir := filepath.Join(dir, "nodes", name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return cell, err
	}
	ccfg := cfg.Cluster
	ccfg.LogDir, ccfg.MaxClients = logDir, 2*clients+128
	if ccfg.Backend == cluster.External && ccfg.External.KeyPrefix == "" {
		ccfg.External.KeyPrefix = harness.RunPrefix("lockcheck:bench-", dir)
	}
	cl, err := cluster.Up(ctx, ccfg)
	if err != nil {
		if errors.Is(err, cluster.ErrExternal) {
			err = workload.ConfigErr(err)
		}
		return cell, err
	}
	defer cl.Down()
	w := cfg.Workload
	w.Clients, w.Keys, w.Retry = clients, keys, retry
	if cfg.Baseline && a.agents == 0 {
		if err := baseline(ctx, cfg, cl, clients, &cell); err != nil {
			return cell, err
		}
	}
	run := func(name string) (*harness.Result, error) {
		runtime.GC() // as the bare loop does (bareLoopAt)
		return harness.Run(ctx, harness.Config{Name: name, OutDir: filepath.Join(dir, "runs"),
			Lock: lock, Registry: cfg.Registry, Workload: w, Nemesis: cfg.Nemesis, Running: cl, Cluster: ccfg, Thresholds: runThresholds(cfg.Thresholds),
			TuneProcs: cfg.Warmup, Options: agent.Options{Agents: a.agents, Spawn: cfg.AgentBinary}})
	}
	res, err := run(name)
	if err != nil {
		return cell, err
	}
	cell.Run, cell.Verdict, cell.ThresholdsFailed, cell.Procs = res.Dir, res.Verdict, len(res.ThresholdsFailed()), res.Procs
	cell.Retry, cell.GiveUps = res.Workload.Policy.String(), res.Summary.GiveUps
	if err := cell.Measure(filepath.Join(res.Dir, "history.jsonl"), res.Started+cfg.Warmup); err != nil {
		return cell, err
	}
	if cfg.Baseline && a.agents == 0 {
		if err := bareRounds(ctx, cfg, cl, w, name, run, &cell); err != nil {
			return cell, err
		}
	}
	cell.RatiosFailed = report.JudgeCell(cell, cfg.Thresholds)
	cell.ThresholdsFailed += len(cell.RatiosFailed)
	cell.PeakRSSMB = float64(harness.PeakRSS()) / (1 << 20)
	return cell, nil
}

// bareRounds measures the cell's bare loop after its first run, then,
// for cfg.Rounds, runs the cell and its bare loop again in turn; the
// cell's rate, bare loop and ratio are the medians of the rounds'. A
// bare loop runs at the GOMAXPROCS its round's run's warm-up chose: the
// two side by side but for what lockcheck adds.
func bareRounds(ctx context.Context, cfg BenchConfig, cl *cluster.Cluster, w workload.Config, name string, run func(string) (*harness.Result, error), cell *report.BenchRow) error {
	rates, bares, ratios := []float64{cell.Acquisitions}, []float64{}, []float64{}
	procs := cell.Procs
	for i := range max(cfg.Rounds, 1) {
		if i > 0 {
			res, err := run(fmt.Sprintf("%s-round%d", name, i+1))
			if err != nil {
				return err
			}
			procs = res.Procs // each run's warm-up chooses its own
			var r report.BenchRow
			if err := r.Measure(filepath.Join(res.Dir, "history.jsonl"), res.Started+cfg.Warmup); err != nil {
				return err
			}
			rates = append(rates, r.Acquisitions)
		}
		bare, err := bareLoopAt(ctx, cfg, cl, cell.Lock, w, procs)
		if err != nil {
			return fmt.Errorf("bare-loop baseline: %w", err)
		}
		bares = append(bares, bare)
		if bare > 0 {
			ratios = append(ratios, rates[i]/bare)
		}
	}
	cell.Rounds, cell.BareRatios, cell.RunRates, cell.BareRates = len(bares), ratios, rates, bares
	cell.Acquisitions, cell.BareLoop, cell.BareRatio = median(rates), median(bares), median(ratios)
	if cell.BaselinePairs > 0 {
		cell.Ratio = cell.Acquisitions / cell.BaselinePairs
	}
	return nil
}

// median is the median of xs (0 if none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// runThresholds are the thresholds of ts judged on a cell's run: all but
// those on its ratios (report.JudgeCell).
func runThresholds(ts []report.Threshold) []report.Threshold {
	var out []report.Threshold
	for _, t := range ts {
		if !t.IsRatio() {
			out = append(out, t)
		}
	}
	return out
}

// retryName is a retry policy as a file name's part.
func retryName(r string) string {
	return strings.NewReplacer(":", "-", ",", "-", " ", "-", "=", "-").Replace(r)
}

// baseline measures redis-benchmark with the commands of an acquire and a
// release at this concurrency on the cell's node, then empties it. An
// acquire+release pair costs one of each, so the pair rate is
// 1 / (1/SET + 1/EVALSHA).
func baseline(ctx context.Context, cfg BenchConfig, cl *cluster.Cluster, clients int, cell *report.BenchRow) error {
	n := cfg.BaselineRequests
	if n == 0 {
		n = max(200*clients, 200_000)
	}
	rc := nodeClient(cl)
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

// nodeClient is a client of the cell's node, for the baselines' set-up
// and for emptying it between them.
func nodeClient(cl *cluster.Cluster) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: cl.Nodes[0].Addr, Password: cl.Password, Protocol: 2, DisableIdentity: true})
}
