package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// CheckDir re-runs the checkers over a run dir (or a history.jsonl path)
// and returns the findings and the results.json content. Options not set
// in opt come from the run's run.json, when there is one. Visualizations
// are written into the run dir. Unreadable input wraps ErrConfig.
func CheckDir(ctx context.Context, path string, opt checker.Options) (checker.Findings, report.Results, error) {
	c, err := checkDir(ctx, path, opt)
	return c.findings, c.results, err
}

// checked is a history checked: what CheckDir returns, and what the
// report needs besides. The history itself is not held (checkDir reads
// it in bounded memory): only its Stats and the ops the report draws.
type checked struct {
	dir      string
	stats    *report.Stats
	shown    []history.Op // the ops on the report's violation timelines
	info     report.RunInfo
	raw      []byte // run.json as on disk
	findings checker.Findings
	results  report.Results
	// thresholds are met by write, into results.json and junit.xml.
	thresholds []report.Threshold
}

func checkDir(ctx context.Context, path string, opt checker.Options) (checked, error) {
	if err := opt.Validate(); err != nil {
		return checked{}, configErr(err)
	}
	return checkWith(ctx, path, func(info report.RunInfo) checker.Options { return resolveCheck(opt, recorded(info)) })
}

// checkRun checks a run's own dir with the options the run resolved.
func checkRun(ctx context.Context, dir string, opt checker.Options) (checked, error) {
	return checkWith(ctx, dir, func(report.RunInfo) checker.Options { return opt })
}

// checkWith reads the run dir (or history) at path and checks it with the
// options options gives for its run.json.
func checkWith(ctx context.Context, path string, options func(report.RunInfo) checker.Options) (checked, error) {
	var c checked
	var hpath string
	c.dir, hpath = path, filepath.Join(path, "history.jsonl")
	if st, err := os.Stat(path); err != nil {
		return c, configErr(fmt.Errorf("%s: no such run dir or history file", path))
	} else if !st.IsDir() {
		c.dir, hpath = filepath.Dir(path), path
	}
	var err error
	if c.info, c.raw, err = report.ReadRunInfo(c.dir); err != nil {
		return c, configErr(err)
	}
	opt := options(c.info)
	if opt.OutDir == "" {
		opt.OutDir = c.dir
	}
	if err := c.check(ctx, hpath, opt); err != nil {
		var le *history.LineError
		if errors.As(err, &le) || errors.Is(err, os.ErrNotExist) || errors.Is(err, history.ErrEmpty) {
			return c, configErr(err)
		}
		return c, err
	}
	return c, nil
}

// check reads the history at hpath once, in batches, into the report's
// Stats and a checker.Partition of spill files in opt.OutDir (removed when
// done), then checks it bucket by bucket: what it holds is bounded by a
// bucket, not by the history's length.
func (c *checked) check(ctx context.Context, hpath string, opt checker.Options) error {
	st, err := os.Stat(hpath)
	if err != nil {
		return err
	}
	part, err := checker.NewPartition(opt.OutDir, checker.BucketsFor(st.Size()))
	if err != nil {
		return err
	}
	defer part.Close()
	c.stats = report.NewStats()
	err = history.ScanFile(hpath, func(batch []history.Op) error {
		// The two readers of a batch, side by side: decoding the next
		// waits for both.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range batch {
				c.stats.Add(&batch[i])
			}
		}()
		err := part.Add(batch)
		<-done
		return err
	})
	var cut *history.CutOff
	if errors.As(err, &cut) {
		err = nil // the whole ops are checked, and the findings say so
	}
	if err != nil {
		return err
	}
	var peaks []checker.KeyPeak // a bucket's keys are its own (checker.Partition)
	if c.findings, err = part.Check(ctx, opt, func(ops []history.Op) {
		c.stats.AddAbandoned(checker.Abandoned(ops))
		peaks = append(peaks, checker.KeyPeaks(ops)...)
	}); err != nil {
		return err
	}
	slices.SortFunc(peaks, func(a, b checker.KeyPeak) int { return strings.Compare(a.Key, b.Key) })
	c.stats.Finish()
	if cut != nil {
		c.findings.CutOff = cut.Error()
	}
	c.results = report.Results{Verdict: c.findings.Verdict, Lock: c.info.Lock, Ops: part.Ops(), Checkers: c.findings.Checkers, NotJudged: c.findings.NotJudged,
		Faults: c.stats.Faults, Coverage: c.findings.Coverage, CutOff: c.findings.CutOff, KeysAtResource: peaks}
	drawn := report.Drawn(c.findings)
	keys := make([]string, len(drawn))
	for i, v := range drawn {
		keys[i] = v.Key
	}
	c.shown, err = part.OpsOf(keys, report.OnTimeline(drawn))
	return err
}

// Check re-checks a run dir or a history file, as CheckDir, and writes
// results.json and the visualizations into out, a directory of its own
// (made if missing). out "" is a check-<timestamp>/ inside the run dir,
// or in the current directory for a history file outside one (lockcheck
// never writes beside a file that is not its own). It returns out.
func Check(ctx context.Context, path, out string, opt checker.Options) (checker.Findings, string, error) {
	latest := ""
	if out == "" {
		// A run's own check goes beside its history; a history from
		// elsewhere, where every other output goes: results/check/<time>,
		// with results/check/latest pointing at it.
		if dir, ok := runDirOf(path); ok {
			out = filepath.Join(dir, "check-"+time.Now().Format("20060102T150405"))
		} else {
			var err error
			if out, err = NewRunDir("results", "check"); err != nil {
				return checker.Findings{}, "", err
			}
			latest = filepath.Join("results", "check")
		}
	}
	_, statErr := os.Stat(out)
	ours := os.IsNotExist(statErr) || latest != ""
	if err := os.MkdirAll(out, 0o755); err != nil {
		return checker.Findings{}, out, configErr(fmt.Errorf("--out: %w", err))
	}
	opt.OutDir = out
	rep, rf, err := CheckDir(ctx, path, opt)
	if err != nil {
		if ours {
			_ = os.Remove(out) // ours, and still empty: nothing was checked
		}
		return rep, out, err
	}
	if err := errors.Join(rep.WriteError(), report.WriteResults(out, rf)); err != nil {
		return rep, out, writeErr(err)
	}
	if latest != "" {
		_ = UpdateLatest(latest, out)
	}
	return rep, out, nil
}

// runDirOf returns the run dir path is, or holds its history: a dir with
// a run.json.
func runDirOf(path string) (string, bool) {
	dir := path
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir = filepath.Dir(path)
	}
	_, err := os.Stat(filepath.Join(dir, "run.json"))
	return dir, err == nil
}

// Report redoes the check and the report on a run dir without Redis:
// check the history, write results.json and the report files. Figures
// the history does not record (elapsed time, what the clients counted)
// are kept from the old results.json.
func Report(ctx context.Context, dir string, opt checker.Options) (checker.Findings, error) {
	c, err := checkDir(ctx, dir, opt)
	if err != nil {
		return c.findings, err
	}
	old, _ := report.ReadResults(c.dir)
	c.results.Elapsed, c.results.OpsPerSec, c.results.Interrupted = old.Elapsed, old.OpsPerSec, old.Interrupted
	return c.findings, c.write(old.Summary.Unrecorded)
}

// write writes results.json, with its summary read off the history and
// u, and the report files.
func (c *checked) write(u history.Unrecorded) error {
	// A Redlock attempt that too few nodes granted is undone, not
	// recorded (its nodes said "taken"): refused all the same.
	c.findings.Coverage[checker.Contended] += int(u.Undone)
	c.results.Coverage = c.findings.Coverage
	c.results.Summary = report.SummaryOf(c.stats, u)
	stats := c.stats
	stats.Advise(c.info.Workload.TTLFactor)
	c.results.TTLAdvice = stats.Advice
	c.results.Latency, c.results.Throughput = stats.Figures()
	c.results.Thresholds = report.Judge(c.results, c.thresholds)
	err := report.WriteResults(c.dir, c.results)
	meta := report.MetaOf(c.dir, c.info, c.raw)
	meta.Thresholds, meta.Unrecorded, meta.KeysAtResource = c.results.Thresholds, u, c.results.KeysAtResource
	if rerr := report.WriteStats(c.dir, c.shown, stats, c.findings, meta); rerr != nil {
		err = errors.Join(err, fmt.Errorf("report: %w", rerr))
	}
	if verr := c.findings.WriteError(); verr != nil {
		err = errors.Join(err, verr)
	}
	if err != nil {
		return writeErr(err)
	}
	return nil
}

// Compare checks two run dirs, writes a page that puts them side by side,
// and returns how the after run regressed beyond maxRegression (a
// fraction: 0.1 is 10%; negative: no gate): acquisitions/s lower, acquire
// p99 higher, or a worse verdict.
func Compare(ctx context.Context, before, after, out string, opt checker.Options, maxRegression float64) ([]string, error) {
	load := func(dir string) (report.Run, error) {
		c, err := checkDir(ctx, dir, opt)
		if err != nil {
			return report.Run{}, err
		}
		return report.Run{Dir: dir, Stats: c.stats, Findings: c.findings, Meta: report.Meta{Lock: c.info.Lock, Redis: c.info.Redis}}, nil
	}
	a, err := load(before)
	if err != nil {
		return nil, err
	}
	b, err := load(after)
	if err != nil {
		return nil, err
	}
	if err := report.WriteCompare(out, a, b); err != nil {
		return nil, err
	}
	if maxRegression < 0 {
		return nil, nil
	}
	return report.Regressions(a, b, maxRegression), nil
}
