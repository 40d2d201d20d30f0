// Package checker decides whether a history could have come from a correct
// lock. It sees only histories: never Redis, never the cluster.
package checker

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Verdict is a checker's or a run's conclusion.
type Verdict string

// Verdicts, in order of precedence when composed.
const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
)

// Defaults for Options.
const (
	DefaultClockTolerance = 25 * time.Millisecond
	DefaultInfoHorizon    = 10 * time.Second
	DefaultTimeout        = 5 * time.Minute
	// MaxViolations caps the violations kept per checker; the rest are counted.
	MaxViolations = 100
)

// None, as a ClockTolerance or InfoHorizon, asks for zero itself: a zero
// value means the default, as everywhere in lockcheck's options.
const None time.Duration = -1

// Exactly is d as an option that means d, zero included.
func Exactly(d time.Duration) time.Duration {
	if d == 0 {
		return None
	}
	return d
}

// MaxDuration bounds ClockTolerance and InfoHorizon, so that no sum of
// history times and them can overflow.
const MaxDuration = time.Duration(history.MaxTime)

// Options tune the checkers.
type Options struct {
	// ClockTolerance (eps) absorbs the difference between our clock and
	// Redis's when deciding whether a lease could have expired.
	ClockTolerance time.Duration
	// InfoHorizon bounds how long after it returned an indeterminate op may
	// still take effect.
	InfoHorizon time.Duration
	// Timeout bounds the linearizability check; keys not done are unknown.
	Timeout time.Duration
	// Memory bounds, in bytes, the memory of the linearizability check's
	// searches, shared out among the keys checked at once; a key whose
	// search would need more than its share is unknown (0: DefaultMemory).
	Memory int64
	// Shape is the shape the history is judged as (a registered Shape's
	// name), as its run recorded it; "": the shape its acquires declare
	// (Shape.Of), else a mutex's.
	Shape string
	// OutDir, if set, receives linear-<key>.html visualizations.
	OutDir string
	// NotJudged are guarantees the check leaves out, each with why: the
	// lease contract of a lock that hands out scopes, not a token and a
	// deadline (lockimpl.Scoped). Their checkers are not run.
	NotJudged map[Guarantee]string

	// resolved marks options Resolved filled in.
	resolved bool

	// shares is how many checks share Memory at once besides the keys
	// of one (Partition's buckets); 0 is 1.
	shares int

	// whole is the length of the whole history when a check sees part
	// of it (Partition): a small history's keys are all visualized.
	whole int

	// minimized counts the violations given their fewest ops (minimal.go),
	// shared by a Partition's buckets so that a check spends that search on
	// minimalKeys keys at most; nil: each call counts its own.
	minimized *atomic.Int64

	// drawSpent is the time spent drawing valid keys (visualizeValid),
	// shared by a Partition's buckets; nil: each call counts its own.
	drawSpent *atomic.Int64

	// skip turns off reductions of reduce.go (the oracle test's modes and
	// the benchmarks' baseline).
	skip reductions
}

// reductions is a set of the reductions of reduce.go.
type reductions uint16

const (
	skipDominated reductions = 1 << iota
	skipExpiredFail
	skipWitness
	skipOrphans
	skipCuts
	skipUncovered
	skipCover
	skipSurplus
	skipEDF
	skipOverlap
	skipShortfall
	skipNarrow
	skipUnowned
	skipHolders
	skipSparse
	// skipAll is porcupine alone on every key.
	skipAll reductions = 1<<16 - 1
)

// Validate says what is wrong with o, if anything.
func (o Options) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"clock tolerance", o.ClockTolerance}, {"info horizon", o.InfoHorizon}} {
		if d.v < 0 && d.v != None || d.v > MaxDuration {
			return fmt.Errorf("%s %v: want 0 or more, at most %v", d.name, d.v, MaxDuration)
		}
	}
	if o.Timeout < 0 {
		return fmt.Errorf("check timeout %v: want 0 (the default) or more", o.Timeout)
	}
	if o.Memory < 0 {
		return fmt.Errorf("check memory %d: want 0 (the default) or more bytes", o.Memory)
	}
	return nil
}

// Resolved is o with defaults filled in and None read as zero: the values
// the checkers use, as they are. A check's two entry points (CheckWith,
// Partition.Check) resolve what they are given, and nothing below them
// does; harness resolves a run's options once, where the run is prepared
// or its dir read, so resolving resolved options must change nothing (a
// 0 read twice stays 0, not the default).
func (o Options) Resolved() Options {
	if o.resolved {
		return o
	}
	o.resolved = true
	resolve := func(v, def time.Duration) time.Duration {
		switch v {
		case 0:
			return def
		case None:
			return 0
		}
		return min(v, MaxDuration)
	}
	o.ClockTolerance = resolve(o.ClockTolerance, DefaultClockTolerance)
	o.InfoHorizon = resolve(o.InfoHorizon, DefaultInfoHorizon)
	o.Timeout = resolve(o.Timeout, DefaultTimeout)
	if o.Memory == 0 {
		o.Memory = DefaultMemory()
	}
	return o
}

// judged is cs without the checkers of the guarantees o leaves out.
func (o Options) judged(cs []Spec) []Spec {
	if len(o.NotJudged) == 0 {
		return cs
	}
	var out []Spec
	for _, s := range cs {
		if _, left := o.NotJudged[s.Guarantee]; !left || s.Guarantee == NoGuarantee {
			out = append(out, s)
		}
	}
	return out
}

// Violation is one reason a checker found a history invalid.
type Violation struct {
	Key     string  `json:"key,omitempty"`
	Message string  `json:"message"`
	Ops     []int64 `json:"ops,omitempty"` // indexes of the ops involved
	// Window is the span of history time the violation covers, in ns.
	Window [2]int64 `json:"window"`
	// Explanation is the ops around the failure point, described in words;
	// first the fewest ops that cannot all be true, when they were found.
	Explanation []string `json:"explanation,omitempty"`
	// Minimal is the indexes of the fewest ops of the key found that no
	// timeline explains on their own (the model re-checked them), when
	// they were sought (the first keys of the lease contract's check).
	Minimal []int64 `json:"minimal,omitempty"`
	// File is a visualization of the key, relative to the results dir.
	File string `json:"file,omitempty"`
}

// Result is one checker's conclusion.
type Result struct {
	Name    string           `json:"name"`
	Verdict Verdict          `json:"verdict"`
	Figures map[string]int64 `json:"figures,omitempty"`
	// ViolationCount counts every violation; Violations keeps the first
	// MaxViolations.
	ViolationCount int         `json:"violation_count"`
	Violations     []Violation `json:"violations,omitempty"`
	// UnknownKeys are keys the checker could not decide; Undecided says
	// why, for each.
	UnknownKeys []string    `json:"unknown_keys,omitempty"`
	Undecided   []Undecided `json:"undecided,omitempty"`
	// WriteError is the first file of the checker's own (a key's
	// visualization) it could not write in full.
	WriteError string `json:"write_error,omitempty"`
	Note       string `json:"note,omitempty"`
	Elapsed    string `json:"elapsed"`
}

func (r *Result) add(v Violation) {
	r.ViolationCount++
	if len(r.Violations) < MaxViolations {
		r.Violations = append(r.Violations, v)
	}
}

// Findings are what every checker found in one history.
type Findings struct {
	Verdict  Verdict  `json:"verdict"`
	Checkers []Result `json:"checkers"`
	// Coverage is what the history exercised (CoverageOf): what the
	// verdict rests on.
	Coverage Coverage `json:"coverage"`
	// NotJudged are the guarantees left out of the check, with why
	// (Options.NotJudged).
	NotJudged map[Guarantee]string `json:"not_judged,omitempty"`
	// CutOff, if set, says the history's last line was cut off (a run
	// killed mid-write) and the findings rest on the whole ops before it.
	CutOff string `json:"cut_off,omitempty"`

	// hits say, for each of the history's fault windows, whether a lease
	// was live at its start and at its end (Merge ORs them across parts).
	hits []windowHit
}

// WriteError returns the first file a checker could not write, if any.
func (r Findings) WriteError() error {
	for _, c := range r.Checkers {
		if c.WriteError != "" {
			return fmt.Errorf("%s: %s", c.Name, c.WriteError)
		}
	}
	return nil
}

// Checker returns the named checker's result, if present.
func (r Findings) Checker(name string) (Result, bool) {
	for _, c := range r.Checkers {
		if c.Name == name {
			return c, true
		}
	}
	return Result{}, false
}

// Compose returns valid only if every verdict is valid, invalid if any is
// invalid, and unknown otherwise.
func Compose(vs ...Verdict) Verdict {
	v := Valid
	for _, x := range vs {
		switch x {
		case Invalid:
			return Invalid
		case Valid:
		default:
			v = Unknown
		}
	}
	return v
}

// Check runs every registered checker over ops. ctx bounds the whole
// check.
func Check(ctx context.Context, ops []history.Op, opt Options) Findings {
	return CheckWith(ctx, All(), ops, opt)
}

// CheckWith runs cs over ops, each timed, and composes their verdicts.
func CheckWith(ctx context.Context, cs []Spec, ops []history.Op, opt Options) Findings {
	opt = opt.Resolved()
	cs = opt.judged(cs)
	rep := Findings{Checkers: make([]Result, len(cs)), NotJudged: opt.NotJudged}
	vs := make([]Verdict, len(cs))
	for i, c := range cs {
		start := time.Now()
		r := c.Check.Check(ctx, ops, opt)
		r.Name, r.Elapsed = c.Name(), time.Since(start).Round(time.Millisecond).String()
		rep.Checkers[i], vs[i] = r, r.Verdict
	}
	rep.Verdict = Compose(vs...)
	rep.Coverage, rep.hits = coverageOf(ops, opt)
	return rep
}

// byKey groups the lock and write ops of a history by key, each group in
// history (completion) order. Nemesis ops are returned separately.
func byKey(ops []history.Op, keep func(*history.Op) bool) (keys []string, groups map[string][]*history.Op) {
	groups = map[string][]*history.Op{}
	for i := range ops {
		op := &ops[i]
		if op.F == history.Nemesis || !keep(op) {
			continue
		}
		if _, ok := groups[op.Key]; !ok {
			keys = append(keys, op.Key)
		}
		groups[op.Key] = append(groups[op.Key], op)
	}
	sort.Strings(keys)
	return keys, groups
}
