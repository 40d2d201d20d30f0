package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// CheckDir re-runs the checkers over a run dir (or a history.jsonl path)
// and returns the report and the results.json content. Options not set in
// opt come from the run's run.json, when there is one. Visualizations are
// written into the run dir. Unreadable input wraps ErrConfig.
func CheckDir(ctx context.Context, path string, opt checker.Options) (checker.Report, ResultsFile, error) {
	rep, rf, _, _, err := checkDir(ctx, path, opt)
	return rep, rf, err
}

// checkDir is CheckDir that also returns the history and run.json.
func checkDir(ctx context.Context, path string, opt checker.Options) (checker.Report, ResultsFile, []history.Op, RunInfo, error) {
	if err := opt.Validate(); err != nil {
		return checker.Report{}, ResultsFile{}, nil, RunInfo{}, configErr(err)
	}
	dir, hpath := path, filepath.Join(path, "history.jsonl")
	if st, err := os.Stat(path); err != nil {
		return checker.Report{}, ResultsFile{}, nil, RunInfo{}, configErr(fmt.Errorf("%s: no such run dir or history file", path))
	} else if !st.IsDir() {
		dir, hpath = filepath.Dir(path), path
	}
	var info RunInfo
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err == nil {
		if err := json.Unmarshal(b, &info); err != nil {
			return checker.Report{}, ResultsFile{}, nil, RunInfo{}, configErr(fmt.Errorf("%s: %v", filepath.Join(dir, "run.json"), err))
		}
		// The run's settings, where the caller set none (0 in run.json
		// means 0).
		for _, f := range []struct {
			opt *time.Duration
			ran string
		}{{&opt.InfoHorizon, info.InfoHorizon}, {&opt.ClockTolerance, info.ClockTolerance}} {
			if d, err := time.ParseDuration(f.ran); err == nil && *f.opt == 0 {
				*f.opt = checker.Exactly(d)
			}
		}
	}
	ops, err := history.ReadFile(hpath)
	if err != nil {
		var le *history.LineError
		if errors.As(err, &le) || errors.Is(err, os.ErrNotExist) || errors.Is(err, history.ErrEmpty) {
			return checker.Report{}, ResultsFile{}, nil, RunInfo{}, configErr(err)
		}
		return checker.Report{}, ResultsFile{}, nil, RunInfo{}, err
	}
	if opt.OutDir == "" {
		opt.OutDir = dir
	}
	rep := checker.Check(ctx, ops, opt)
	rf := ResultsFile{Verdict: rep.Verdict, Lock: info.Lock, Ops: int64(len(ops)), Checkers: rep.Checkers,
		Faults: checker.FaultWindows(ops)}
	return rep, rf, ops, info, nil
}

// Check re-checks a run dir or a history file, as CheckDir, and writes
// results.json and the visualizations into out, a directory of its own
// (made if missing). out "" is a check-<timestamp>/ inside the run dir,
// or in the current directory for a history file outside one (lockcheck
// never writes beside a file that is not its own). It returns out.
func Check(ctx context.Context, path, out string, opt checker.Options) (checker.Report, string, error) {
	if out == "" {
		parent := "."
		if dir, ok := runDirOf(path); ok {
			parent = dir
		}
		out = filepath.Join(parent, "check-"+time.Now().Format("20060102T150405"))
	}
	_, statErr := os.Stat(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return checker.Report{}, out, configErr(fmt.Errorf("--out: %w", err))
	}
	opt.OutDir = out
	rep, rf, err := CheckDir(ctx, path, opt)
	if err != nil {
		if os.IsNotExist(statErr) {
			_ = os.Remove(out) // ours, and still empty: nothing was checked
		}
		return rep, out, err
	}
	return rep, out, writeJSON(filepath.Join(out, "results.json"), rf)
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

// Report redoes stages 3 and 4 on a run dir without Redis: check the
// history, write results.json (keeping the workload's counters from the
// old one) and the report files.
func Report(ctx context.Context, dir string, opt checker.Options) (checker.Report, error) {
	rep, rf, ops, info, err := checkDir(ctx, dir, opt)
	if err != nil {
		return rep, err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	var old ResultsFile
	if b, err := os.ReadFile(filepath.Join(dir, "results.json")); err == nil {
		_ = json.Unmarshal(b, &old)
		rf.Summary, rf.Elapsed, rf.OpsPerSec, rf.Interrupted = old.Summary, old.Elapsed, old.OpsPerSec, old.Interrupted
	}
	if err := writeJSON(filepath.Join(dir, "results.json"), rf); err != nil {
		return rep, err
	}
	return rep, writeReport(dir, ops, rep, info, rf.Summary.CutShort)
}

// writeReport writes report.html, junit.xml and the .hgrm files.
func writeReport(dir string, ops []history.Op, rep checker.Report, info RunInfo, cutShort int64) error {
	raw, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	meta := report.Meta{Lock: info.Lock, LockVersion: info.LockVersion, Redis: info.Redis, Lockcheck: info.Lockcheck, Topology: info.Topology,
		Command: shellJoin(info.Args), Config: string(raw), CutShort: cutShort, Nodes: map[string]string{}}
	for _, n := range info.Nodes {
		meta.Nodes[n.Name] = filepath.Join(dir, n.Log)
	}
	return report.Write(dir, ops, rep, meta)
}

// shellJoin quotes args for a shell where needed.
func shellJoin(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./,:@%+", r))
		}) < 0 {
			b.WriteString(a)
		} else {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'")
		}
	}
	return b.String()
}

// Compare checks two run dirs and writes a page that puts them side by side.
func Compare(ctx context.Context, before, after, out string, opt checker.Options) error {
	load := func(dir string) (report.Run, error) {
		rep, _, ops, info, err := checkDir(ctx, dir, opt)
		if err != nil {
			return report.Run{}, err
		}
		return report.Run{Dir: dir, Ops: ops, Report: rep, Meta: report.Meta{Lock: info.Lock, Redis: info.Redis}}, nil
	}
	a, err := load(before)
	if err != nil {
		return err
	}
	b, err := load(after)
	if err != nil {
		return err
	}
	return report.WriteCompare(out, a, b)
}
