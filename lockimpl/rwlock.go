package lockimpl

import (
	"context"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ReadWriter is implemented by a read-write lock (DESIGN "Shapes beyond
// the mutex"): a key's lease is taken in one of two access modes,
// history.AccessRead (shared with other readers) or history.AccessWrite
// (exclusive). Acquire, as Locker has it, takes the mode its context
// names (WithAccess), a write if none: so a run with no readers is a
// mutex's run, and a wrapper that calls Acquire (the watchdog of
// --extend-every) keeps the mode the workload asked for. Release and Extend are per lease, in
// whichever mode it was taken. A workload with readers (--readers)
// runs only a lock that has it, and records each acquire's mode
// (history.Op.Access).
type ReadWriter interface {
	// AcquireIn takes key's lease in access mode: history.AccessRead or
	// history.AccessWrite. Any other mode is a bad call (an error, not a
	// refusal).
	AcquireIn(ctx context.Context, key string, ttl time.Duration, access string) (Lease, error)
	// WritersPreferred says the lock declares writer preference: it
	// refuses a read acquire of a key while a write acquire of that key
	// is in flight, as well as while a writer holds it. Without it, a
	// read acquire is refused only while a write lease is held.
	WritersPreferred() bool
}

// ReadWriterOf is l as a ReadWriter, if it is one.
func ReadWriterOf(l Locker) (ReadWriter, bool) {
	rw, ok := l.(ReadWriter)
	return rw, ok
}

// WritersPreferredOf says l is a ReadWriter that declares writer
// preference.
func WritersPreferredOf(l Locker) bool {
	rw, ok := l.(ReadWriter)
	return ok && rw.WritersPreferred()
}

type accessKey struct{}

// WithAccess tags ctx with the access mode an Acquire of a ReadWriter
// takes.
func WithAccess(ctx context.Context, access string) context.Context {
	return context.WithValue(ctx, accessKey{}, access)
}

// AccessOf is the access mode ctx names: history.AccessWrite if none.
func AccessOf(ctx context.Context) string {
	if a, ok := ctx.Value(accessKey{}).(string); ok && a != "" {
		return a
	}
	return history.AccessWrite
}

// CheckAccess says why access is not a mode a ReadWriter takes, if it
// is not.
func CheckAccess(access string) error {
	if access != history.AccessRead && access != history.AccessWrite {
		return fmt.Errorf("access %q: want %q or %q", access, history.AccessRead, history.AccessWrite)
	}
	return nil
}
