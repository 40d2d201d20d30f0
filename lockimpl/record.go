package lockimpl

import (
	"errors"

	"github.com/lockcheck/lockcheck/history"
)

// Deferred is an error whose outcome is not known yet: a lock process's
// request given up on, whose reply may still come and say how it ended.
// Defer takes the op that records the call, to be recorded when the
// outcome is known; it reports false when it never will be (record it
// now).
type Deferred interface {
	error
	Defer(op history.Op, record func(history.Op)) bool
}

// Record sets op's type and error from err, the outcome of the lock call
// op records, and hands op to record, now or, for a Deferred error, when
// its outcome is known.
func Record(record func(history.Op), op history.Op, err error) {
	op.Type = Outcome(err)
	if err != nil {
		op.Error = err.Error()
		// Only an indeterminate op can be answered: a refusal, the most
		// frequent error, skips the walk of its chain.
		op.Answered = op.Type == history.Info && errors.Is(err, ErrNoOutcome)
	}
	var d Deferred
	if errors.As(err, &d) && d.Defer(op, record) {
		return
	}
	record(op)
}
