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
		Faults: FaultWindows(ops)}
	return rep, rf, nil
}

// FaultWindow is one fault as the history recorded it.
type FaultWindow struct {
	Fault   string   `json:"fault"`
	Targets []string `json:"targets,omitempty"`
	Start   int64    `json:"start_ns"`
	Stop    int64    `json:"stop_ns"` // -1: never healed
	Error   string   `json:"error,omitempty"`
}

// String is "failover n1 3.002s..9.106s".
func (w FaultWindow) String() string {
	stop := "(never healed)"
	if w.Stop >= 0 {
		stop = history.Seconds(w.Stop)
	}
	s := fmt.Sprintf("%s %s %s..%s", w.Fault, strings.Join(w.Targets, ","), history.Seconds(w.Start), stop)
	if w.Error != "" {
		s += " (" + w.Error + ")"
	}
	return s
}

// FaultWindows pairs the nemesis ops of a history into windows.
func FaultWindows(ops []history.Op) []FaultWindow {
	var ws []FaultWindow
	open := map[string]int{}
	for i := range ops {
		op := &ops[i]
		if op.F != history.Nemesis || op.Value == nil {
			continue
		}
		id := op.Value.Fault + "/" + strings.Join(op.Value.Targets, ",")
		switch op.Value.Phase {
		case "start":
			open[id] = len(ws)
			ws = append(ws, FaultWindow{Fault: op.Value.Fault, Targets: op.Value.Targets, Start: op.Call, Stop: -1, Error: op.Error})
		case "stop":
			if k, ok := open[id]; ok {
				ws[k].Stop = op.Return
				if ws[k].Error == "" {
					ws[k].Error = op.Error
				}
				delete(open, id)
			}
		}
	}
	return ws
}
