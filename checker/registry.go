package checker

import (
	"context"
	"fmt"

	"github.com/lockcheck/lockcheck/internal/ext"

	"github.com/lockcheck/lockcheck/history"
)

// A Checker decides one property of a history. To add one: a file with
// its Spec, and a line in builtin (or, from outside the package, a call
// to Register before the check). Every path that checks a history (run,
// check, report, verify, bench, lockchecktest) runs the registered
// checkers, in their order.
type Checker interface {
	Name() string
	Check(ctx context.Context, ops []history.Op, opt Options) Result
}

// Spec is a registered checker: what it judges, and how its findings on
// the parts of a history split by key (Partition) make the whole's.
type Spec struct {
	// Check judges a history, or a part holding every op of its keys and
	// every nemesis op: its verdicts and figures on the parts merge into
	// those of the whole.
	Check Checker
	// Counts, if set, judges from the history's counts alone, and is run
	// once over the whole instead of Check on each part (stats).
	Counts func(history.Counts) Result
	// Figures declares each figure the checker reports and how it merges
	// across parts; a figure not declared is an error in the checker
	// (TestRegistry_FiguresDeclared).
	Figures map[string]FigureMerge
	// Guarantee is what a violation of this checker breaks, as verify
	// gates and reports it (None: it gates only through the run's
	// verdict).
	Guarantee Guarantee
}

// Name is the checker's name.
func (s Spec) Name() string { return s.Check.Name() }

// FigureMerge is how one figure of a checker combines across parts.
type FigureMerge int

const (
	// Sum: the parts' figures add up (counts).
	Sum FigureMerge = iota
	// Max: the largest part's (a longest, a peak).
	Max
)

// Guarantee is a property verify judges a lock by.
type Guarantee string

const (
	// NoGuarantee is a checker outside verify's two guarantees.
	NoGuarantee Guarantee = ""
	// LeaseContract: no history a correct lease could not produce, and
	// a lock that lets go.
	LeaseContract Guarantee = "lease"
	// MutualExclusion at the protected resource.
	MutualExclusion Guarantee = "mutex"
)

// builtin are lockcheck's own checkers, in the order they report.
func builtin() []Spec {
	return []Spec{statsSpec, mutexSpec, fencingSpec, linearizableSpec, livenessSpec}
}

var added ext.Added[Spec]

// Register adds a checker after the built-in ones, for every check from
// here on, until the func it returns unregisters it. It panics on a name
// already registered (two checkers cannot share a line of results.json).
func Register(s Spec) (unregister func()) {
	if _, dup := specOf(s.Name()); dup {
		panic(fmt.Sprintf("checker %q registered twice", s.Name()))
	}
	return added.Add(s)
}

// All returns every checker a check runs, in report order.
func All() []Spec { return added.With(builtin()) }

// specOf returns the registered checker named name.
func specOf(name string) (Spec, bool) {
	for _, s := range All() {
		if s.Name() == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Of returns the names of the registered checkers of guarantee g.
func Of(g Guarantee) []string {
	var names []string
	for _, s := range All() {
		if s.Guarantee == g {
			names = append(names, s.Name())
		}
	}
	return names
}

// Func makes a Checker of a function.
func Func(name string, f func(ctx context.Context, ops []history.Op, opt Options) Result) Checker {
	return funcChecker{name, f}
}

type funcChecker struct {
	name string
	f    func(ctx context.Context, ops []history.Op, opt Options) Result
}

func (c funcChecker) Name() string { return c.name }
func (c funcChecker) Check(ctx context.Context, ops []history.Op, opt Options) Result {
	return c.f(ctx, ops, opt)
}
