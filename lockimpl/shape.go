package lockimpl

import "cmp"

// The shapes a lock has (DESIGN "Shapes beyond the mutex"), as an Entry
// declares it (Entry.Shape) and a spec or a lock process says it: a
// mutex, one holder of a key at a time; a semaphore, Permits holders
// (Permitter); a read-write lock, readers together or one writer
// (ReadWriter).
const (
	ShapeMutex     = "mutex"
	ShapeSemaphore = "semaphore"
	ShapeRWLock    = "rwlock"
)

// ShapeName is the shape e declares: ShapeMutex where it declares none.
func (e Entry) ShapeName() string { return cmp.Or(e.Shape, ShapeMutex) }

// ShapeOfLock is the shape lock l has, as its capabilities say: a
// ReadWriter's, a Reenterer's, a semaphore's where it has more than one
// permit a key (built with Env.Permits over 1), else a mutex's.
func ShapeOfLock(l Locker) string {
	if _, ok := ReadWriterOf(l); ok {
		return ShapeRWLock
	}
	if _, ok := l.(Reenterer); ok {
		return ShapeReentrant
	}
	if PermitsOf(l) > 1 {
		return ShapeSemaphore
	}
	return ShapeMutex
}
