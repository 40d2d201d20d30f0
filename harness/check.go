package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// CheckDir re-runs the checkers over a run dir (or a history.jsonl path)
// and returns the report and the results.json content. Options not set in
// opt come from the run's run.json, when there is one. Visualizations are
// written into the run dir. Unreadable input wraps ErrConfig.
func CheckDir(ctx context.Context, path string, opt checker.Options) (checker.Report, ResultsFile, error) {
	dir, hpath := path, filepath.Join(path, "history.jsonl")
	if st, err := os.Stat(path); err != nil {
		return checker.Report{}, ResultsFile{}, configErr(fmt.Errorf("%s: no such run dir or history file", path))
	} else if !st.IsDir() {
		dir, hpath = filepath.Dir(path), path
	}
	var info RunInfo
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err == nil {
		if err := json.Unmarshal(b, &info); err != nil {
			return checker.Report{}, ResultsFile{}, configErr(fmt.Errorf("%s: %v", filepath.Join(dir, "run.json"), err))
		}
		if opt.InfoHorizon == 0 {
			opt.InfoHorizon, _ = time.ParseDuration(info.InfoHorizon)
		}
		if opt.ClockTolerance == 0 {
			opt.ClockTolerance, _ = time.ParseDuration(info.ClockTolerance)
		}
	}
	ops, err := history.ReadFile(hpath)
	if err != nil {
		var le *history.LineError
		if errors.As(err, &le) || errors.Is(err, os.ErrNotExist) {
			return checker.Report{}, ResultsFile{}, configErr(err)
		}
		return checker.Report{}, ResultsFile{}, err
	}
	if opt.OutDir == "" {
		opt.OutDir = dir
	}
	rep := checker.Check(ctx, ops, opt)
	rf := ResultsFile{Verdict: rep.Verdict, Lock: info.Lock, Ops: int64(len(ops)), Checkers: rep.Checkers,
		Faults: checker.FaultWindows(ops)}
	return rep, rf, nil
}
