package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of a Config's zero fields.
const (
	DefaultBudget = 10 * time.Minute
	DefaultRuns   = 5
)

// Outcome is what one run of a plan broke (nil: nothing, or a harness
// failure, which counts as not reproduced).
type Outcome struct {
	Breaks []Break
	// Dir is the run's results, if it kept them.
	Dir string
}

// Trial runs plan p once. An error with ctx done is an interruption and
// counts for nothing; any other error is a run that did not reproduce.
type Trial func(ctx context.Context, p Plan) (Outcome, error)

// Config is one shrink.
type Config struct {
	// From is the broken run's plan, Target the finding to keep.
	From   Plan
	Target Finding
	// BreakAt is when From broke with Target (history time, ns).
	BreakAt int64
	Trial   Trial
	// Runs is how many runs a candidate gets to break (0: DefaultRuns),
	// and Measure how many the smallest plan's reproduction rate is
	// measured over (0: Runs).
	Runs    int
	Measure int
	// Budget bounds the whole shrink (0: DefaultBudget), its phases each
	// a share of what is left.
	Budget time.Duration
	// State, if set, is the file the shrink's progress is kept in after
	// every run, and resumed from.
	State string
	// Log receives a line per accepted step and per phase.
	Log io.Writer
}

// Result is what a shrink ends with.
type Result struct {
	Before, After Plan
	Target        Finding
	// Reproduced of Measured runs of After broke with Target, and
	// Baseline of BaselineRuns of Before.
	Reproduced, Measured   int
	Baseline, BaselineRuns int
	// Runs is every run the shrink made, resumed ones' included, and
	// Elapsed the time they took.
	Runs    int
	Elapsed time.Duration
	// Late names the phases that passed their deadlines.
	Late []string
	// Dir is a run of After that broke, if one was kept.
	Dir string
}

// Summary is the result's one line.
func (r Result) Summary() string {
	return fmt.Sprintf("shrink: %s -> %s; %s reproduced in %d of %d runs (the original in %d of %d); %d runs in %v",
		r.Before.Size(), r.After.Size(), r.Target, r.Reproduced, r.Measured, r.Baseline, r.BaselineRuns, r.Runs, r.Elapsed.Round(time.Second))
}

// ErrInterrupted is a shrink stopped before its end (its context ended):
// its state file resumes it.
var ErrInterrupted = errors.New("shrink interrupted")

// phase is one dimension's reduction: it returns the best plan it found.
type phase struct {
	name string
	// share is its part of the reduction budget left when it starts.
	share float64
	run   func(s *shrinker, ctx context.Context) error
}

// phases are cheapest first, after the original's own rate (baseline):
// the run cut short past its break, then
// clients, windows and keys, the windows left shortened and moved
// earlier, then clients again (fewer keys may need fewer), and the
// length again on the smaller run.
var phases = []phase{
	{"baseline", 0.3, (*shrinker).baseline},
	{"duration", 0.1, (*shrinker).cutDuration},
	{"clients", 0.35, (*shrinker).cutClients},
	{"windows", 0.4, (*shrinker).cutWindows},
	{"keys", 0.5, (*shrinker).cutKeys},
	{"window-lengths", 0.4, (*shrinker).shortenWindows},
	{"window-starts", 0.4, (*shrinker).moveWindows},
	{"clients-again", 0.7, (*shrinker).cutClients},
	{"duration-again", 1, (*shrinker).cutDuration},
}

// measureShare is the part of the budget kept for measuring the smallest
// plan's reproduction rate.
const measureShare = 0.2

// Shrink reduces cfg.From to the smallest plan found within the budget
// that still breaks with cfg.Target, and measures how often it does.
func Shrink(ctx context.Context, cfg Config) (Result, error) {
	s, err := newShrinker(cfg)
	if err != nil {
		return Result{}, err
	}
	if s.st.Done {
		return s.stop(nil)
	}
	deadline := s.start.Add(s.budget - s.st.Elapsed)
	reduceBy := deadline.Add(-time.Duration(float64(s.budget) * measureShare))
	for i := s.st.Phase; i < len(phases); i++ {
		ph := phases[i]
		left := time.Until(reduceBy)
		if left <= 0 {
			s.late(ph.name, "the budget's reduction share was spent before it began")
			continue
		}
		pctx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Duration(float64(left)*ph.share)))
		err := ph.run(s, pctx)
		passed := pctx.Err() == context.DeadlineExceeded
		cancel()
		if ctx.Err() != nil {
			return s.stop(ErrInterrupted)
		}
		if passed {
			s.late(ph.name, fmt.Sprintf("passed its deadline (%v of the budget); going on with the best plan so far", (time.Duration(float64(left)*ph.share)).Round(time.Second)))
		} else if err != nil {
			return s.stop(err)
		}
		s.st.Phase = i + 1
		s.save()
	}
	mctx, cancel := context.WithDeadline(ctx, deadline.Add(time.Duration(float64(s.budget)*measureShare/2)))
	defer cancel()
	s.measure(mctx)
	if ctx.Err() != nil {
		return s.stop(ErrInterrupted)
	}
	if mctx.Err() != nil {
		s.late("measure", "passed its deadline: the rate is over the runs made")
	}
	s.st.Done = true
	return s.stop(nil)
}
