package checker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ext"
)

// A Shape is how the checkers judge the histories of one shape of lock
// (DESIGN "Shapes beyond the mutex"): which histories are its, the model
// the linearizable checker runs on them and the rule the mutex checker
// applies at the resource. The two checkers keep their names for every
// shape, so that verify's gates, the thresholds and the report read one
// line each. To add a shape: a file with its Shape and a line in
// builtinShapes (or, from outside the package, RegisterShape); a run
// records its lock's shape (run.json), and a check of that run judges by
// the shape of that name.
type Shape struct {
	// Name is the shape's, as a lock declares it (lockimpl.Entry.Shape)
	// and run.json records it.
	Name string
	// Of says a history's acquires declare this shape (a semaphore's
	// permits, a read-write lock's access): a history checked without a
	// recorded shape is the first whose Of says so, else a mutex's. Nil:
	// only a recorded shape names it.
	Of func(ops []history.Op) bool
	// Linearizable judges the lease contract: the ops of a history of
	// this shape against the shape's model, its verdict and figures
	// under the linearizable checker's name.
	Linearizable func(ctx context.Context, ops []history.Op, opt Options) Result
	// AtResource judges mutual exclusion: the shape's rule on the
	// sections its writes mark, under the mutex checker's name.
	AtResource func(ops []history.Op) Result

	// coverage counts the figures of figures on a history of the shape
	// (CoverageOf), for the shapes of this package.
	coverage func(c shapeCounts)
	figures  []string
	// peaks: its keys' peak holders are reported (KeyPeaks).
	peaks bool
}

// shapeCounts is what a shape's coverage reads and writes.
type shapeCounts struct {
	cov      Coverage
	ops      []history.Op
	acquires map[string][]*history.Op
	keys     map[string]*keyLeases
	o        Options
}

// mutexShape is the shape of a history no other claims: one holder of a
// key at a time, judged by the lease model (LinearizableMutex) and by
// Mutex at the resource.
var mutexShape = Shape{Name: "mutex", Linearizable: LinearizableMutex, AtResource: Mutex}

// builtinShapes are lockcheck's own shapes, the mutex first; a history
// without a recorded shape is judged by the first of the others whose Of
// claims it.
func builtinShapes() []Shape {
	return []Shape{mutexShape, semaphoreShape, readWriteShape, reentrantShape}
}

var addedShapes ext.Added[Shape]

// RegisterShape adds a shape after the built-in ones, for every check
// from here on, until the func it returns unregisters it. It panics on a
// name already registered.
func RegisterShape(s Shape) (unregister func()) {
	if _, dup := ShapeNamed(s.Name); dup {
		panic(fmt.Sprintf("shape %q registered twice", s.Name))
	}
	if s.Linearizable == nil || s.AtResource == nil {
		panic(fmt.Sprintf("shape %q needs both a Linearizable and an AtResource", s.Name))
	}
	return addedShapes.Add(s)
}

// Shapes are the registered shapes, the built-in ones first.
func Shapes() []Shape { return addedShapes.With(builtinShapes()) }

// ShapeNamed is the registered shape of that name ("": the mutex's).
func ShapeNamed(name string) (Shape, bool) {
	if name == "" {
		return mutexShape, true
	}
	i := slices.IndexFunc(Shapes(), func(s Shape) bool { return s.Name == name })
	if i < 0 {
		return Shape{}, false
	}
	return Shapes()[i], true
}

// shapeOf is the shape ops are judged as: the one opt records (the
// run's), else the first whose Of claims them, else the mutex. A
// recorded shape no registry holds is an error: a verdict under another
// shape's rules would be a verdict on the wrong question.
func shapeOf(ops []history.Op, opt Options) (Shape, error) {
	if opt.Shape != "" {
		if s, ok := ShapeNamed(opt.Shape); ok {
			return s, nil
		}
		names := []string{}
		for _, s := range Shapes() {
			names = append(names, s.Name)
		}
		return Shape{}, fmt.Errorf("the run's shape %q is not one this lockcheck knows (%s): check it with the program that registers it", opt.Shape, strings.Join(names, ", "))
	}
	for _, s := range Shapes() {
		if s.Of != nil && s.Of(ops) {
			return s, nil
		}
	}
	return mutexShape, nil
}

// unknownShape is checker name's result on a history whose shape is not
// registered: unknown, and why.
func unknownShape(name string, err error) Result {
	return Result{Name: name, Verdict: Unknown, Note: err.Error(), Figures: map[string]int64{}}
}
