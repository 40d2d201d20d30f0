package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/checker"
)

// The deadlines of a run's phases that no flag sets. Each phase's own
// waits are bounded tighter than these (Redis's start by its tries,
// every op by --op-timeout); a phase's deadline is what holds when one
// of them does not.
const (
	// StartLimit bounds starting Redis (the largest topology, a Redis
	// Cluster that forms in up to 30 s, with room for a loaded machine).
	StartLimit = 2 * time.Minute
	// BuildLimit bounds building the lock under test (a lock process
	// spawned and answering its ping), or the agents' join beyond
	// --join-timeout: their ready, and their clocks measured.
	BuildLimit = time.Minute
	// DrainLimit is how long the clients have, once the run's time is
	// up, to finish their ops (each bounded by --op-timeout) and the
	// faults to heal; the agents' (agent.DrainLimit) is inside it.
	DrainLimit = agent.DrainLimit + 15*time.Second
	// HealLimit bounds healing every fault once the clients stopped,
	// beside --restart-delay (a node killed comes back after it).
	HealLimit = 2 * time.Minute
	// CloseLimit bounds closing the lock (a lock process told to exit).
	CloseLimit = 30 * time.Second
	// ReportLimit bounds writing the results once the check is done.
	ReportLimit = 2 * time.Minute
	// StopLimit bounds stopping Redis.
	StopLimit = time.Minute
	// PlayLimit bounds the play of a run with no --duration (one that
	// ends after --ops).
	PlayLimit = time.Hour
	// PhaseGrace is how long a phase is given to stop once its
	// deadline passed and it was told to: past it, it is abandoned.
	PhaseGrace = 5 * time.Second
)

// limits are the constants above that the phases read: tests make them
// short (export_test.go).
var limits = struct{ drain, close, grace time.Duration }{DrainLimit, CloseLimit, PhaseGrace}

// PhaseError is a phase of a run that passed its deadline: the run
// ended there (exit 4) rather than wait without a bound.
type PhaseError struct {
	// Phase is its name: start, build, join, play, drain, heal, close,
	// check, report, stop.
	Phase string
	// Limit is its deadline, Why where that came from.
	Limit time.Duration
	Why   string
	// Abandoned says it did not stop when told to: whatever it was
	// doing is left unfinished, and nothing after it ran.
	Abandoned bool
}

func (e *PhaseError) Error() string {
	s := fmt.Sprintf("phase %s passed its deadline of %v (%s)", e.Phase, e.Limit.Round(time.Millisecond), e.Why)
	if e.Abandoned {
		s += fmt.Sprintf(", and did not stop within %v of being told to: nothing after it ran, and the history lacks its ops in flight, so it is not checked", limits.grace)
	}
	return s
}

// within runs phase fn under limit. fn's ctx ends with a PhaseError as
// its cause once limit passes; fn that returns then has its error
// joined to the PhaseError. fn that does not return within phaseGrace
// more is abandoned: within returns the PhaseError (Abandoned) and fn is
// left to finish on its own, with nothing of the run after it.
func within(ctx context.Context, phase string, limit time.Duration, why string, fn func(context.Context) error) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(pctx) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	perr := &PhaseError{Phase: phase, Limit: limit, Why: why}
	cancel(perr)
	select {
	case err := <-done:
		if errors.Is(err, perr) {
			return perr
		}
		return errors.Join(perr, err)
	case <-time.After(limits.grace):
		perr.Abandoned = true
		return perr
	}
}

// abandoned says whether err holds a phase that did not stop.
func abandoned(err error) bool {
	var pe *PhaseError
	return errors.As(err, &pe) && pe.Abandoned
}

// playLimit is how long the clients may play: the run's duration, an op
// timeout for the ops it cut short, and the drain.
func (r *run) playLimit() (time.Duration, string) {
	w := r.workload
	if w.Duration == 0 {
		return PlayLimit, "a run without --duration plays at most an hour"
	}
	return w.Duration + w.OpTimeout + limits.drain, fmt.Sprintf("--duration %v + --op-timeout %v + %v to drain", w.Duration, w.OpTimeout, limits.drain)
}

// joinLimit is how long the agents have to join and be measured.
func (r *run) joinLimit() (time.Duration, string) {
	if r.cfg.Agents == 0 {
		return BuildLimit, "building the lock"
	}
	j := r.cfg.JoinTimeout
	if j == 0 {
		j = agent.DefaultJoinTimeout
	}
	return j + BuildLimit, fmt.Sprintf("--join-timeout %v + %v for the agents' ready and clocks", j, BuildLimit)
}

// checkLimit is how long the check and its report may take: the check's
// own timeout (past which its keys are unknown) and the writing.
func (r *run) checkLimit() (time.Duration, string) {
	t := r.check.Timeout
	if t == 0 {
		t = checker.DefaultTimeout
	}
	return t + ReportLimit, fmt.Sprintf("--check-timeout %v + %v to read the history and write the report", t, ReportLimit)
}
