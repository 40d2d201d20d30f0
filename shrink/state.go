package shrink

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// state is a shrink's progress, kept in its state file after every run:
// the best plan so far, the phase it is in, what each plan tried did.
// A shrink stopped midway (Ctrl-C) and run again goes on from it.
type state struct {
	// From is the key of the plan shrunk, and Target its finding: a
	// state of another shrink is not resumed.
	From   string  `json:"from"`
	Target Finding `json:"target"`
	Best   Plan    `json:"best"`
	// BestDir is a run of Best that broke, and BreakAt when (history
	// time, ns): where the next cut of the length starts from.
	BestDir string `json:"best_dir,omitempty"`
	BreakAt int64  `json:"break_at_ns"`
	// Phase is the index of the phase under way.
	Phase int `json:"phase"`
	// Tried is each plan tried (by Plan.Key): runs made, runs broke.
	Tried   map[string]tally `json:"tried"`
	Runs    int              `json:"runs"`
	Elapsed time.Duration    `json:"elapsed_ns"`
	Late    []string         `json:"late,omitempty"`
	// Baseline is what the original's runs did, and Need the breaks a
	// candidate must make in its runs to be kept: half the original's,
	// one at least.
	Baseline   tally `json:"baseline"`
	Need       int   `json:"need"`
	Reproduced int   `json:"reproduced"`
	Measured   int   `json:"measured"`
	Done       bool  `json:"done"`
}

// tally is what a plan's runs did.
type tally struct {
	Runs  int `json:"runs"`
	Broke int `json:"broke"`
}

// shrinker is one shrink under way.
type shrinker struct {
	cfg    Config
	budget time.Duration
	runs   int
	st     state
	log    io.Writer
	// base is the time spent before this process resumed it, start when
	// this process began.
	base  time.Duration
	start time.Time
}

func newShrinker(cfg Config) (*shrinker, error) {
	if cfg.Trial == nil || cfg.Target.Checker == "" {
		return nil, errors.New("shrink: a trial and a finding to keep are needed")
	}
	s := &shrinker{cfg: cfg, budget: cfg.Budget, runs: cfg.Runs, log: cfg.Log, start: time.Now()}
	if s.budget <= 0 {
		s.budget = DefaultBudget
	}
	if s.runs <= 0 {
		s.runs = DefaultRuns
	}
	if s.log == nil {
		s.log = io.Discard
	}
	s.st = state{From: cfg.From.Key(), Target: cfg.Target, Best: cfg.From.Clone(), BreakAt: cfg.BreakAt, Tried: map[string]tally{}}
	if cfg.State == "" {
		return s, nil
	}
	b, err := os.ReadFile(cfg.State)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("shrink state %s: %v (remove it to start again)", cfg.State, err)
	}
	if st.From != s.st.From || st.Target != cfg.Target {
		return nil, fmt.Errorf("shrink state %s is of another run or finding: remove it, or give another output dir", cfg.State)
	}
	if st.Tried == nil {
		st.Tried = map[string]tally{}
	}
	s.st, s.base = st, st.Elapsed
	fmt.Fprintf(s.log, "shrink: resuming from %s: best so far %s, phase %d of %d, %d runs in %v\n",
		cfg.State, st.Best.Size(), st.Phase+1, len(phases), st.Runs, st.Elapsed.Round(time.Second))
	return s, nil
}

// save writes the state file, through a temporary file so that a shrink
// killed mid-write keeps the last one.
func (s *shrinker) save() {
	s.st.Elapsed = s.base + time.Since(s.start)
	if s.cfg.State == "" {
		return
	}
	b, err := json.MarshalIndent(s.st, "", " ")
	if err == nil {
		tmp := s.cfg.State + ".tmp"
		if err = os.WriteFile(tmp, b, 0o644); err == nil {
			err = os.Rename(tmp, s.cfg.State)
		}
	}
	if err != nil {
		fmt.Fprintf(s.log, "shrink: state %s not written: %v\n", filepath.Base(s.cfg.State), err)
	}
}

// late names a phase that passed its deadline.
func (s *shrinker) late(phase, why string) {
	s.st.Late = append(s.st.Late, phase)
	fmt.Fprintf(s.log, "shrink: phase %s %s\n", phase, why)
}

// stop ends the shrink with err, its state saved.
func (s *shrinker) stop(err error) (Result, error) {
	s.save()
	st := s.st
	return Result{Before: s.cfg.From, After: st.Best, Target: st.Target, Reproduced: st.Reproduced, Measured: st.Measured,
		Baseline: st.Baseline.Broke, BaselineRuns: st.Baseline.Runs,
		Runs: st.Runs, Elapsed: st.Elapsed, Late: st.Late, Dir: st.BestDir}, err
}
