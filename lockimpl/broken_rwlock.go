package lockimpl

import "github.com/redis/go-redis/v9"

// The classic mistakes of a read-write lock, each an RWLock with one
// script swapped, as broken_semaphore.go's are Semaphore's.

// The broken scripts: each the correct one with its check narrowed.
const (
	// rwWriteIgnoresReadersSource: a writer that checks only for another
	// writer, so it is granted over readers that hold the key.
	rwWriteIgnoresReadersSource = rwPrune + rwAnyWriter + rwAdd
	// rwReadIgnoresWriterSource: a reader that checks nothing, so it is
	// granted while a writer holds the key.
	rwReadIgnoresWriterSource = rwPrune + rwAdd
)

var (
	rwWriteIgnoresReaders = redis.NewScript(rwWriteIgnoresReadersSource)
	rwReadIgnoresWriter   = redis.NewScript(rwReadIgnoresWriterSource)
)

// brokenRWFactory is RWLock's factory with one script swapped by swap.
func brokenRWFactory(swap func(*RWLock)) Factory {
	return func(env Env) (Locker, error) {
		l, err := NewRWLock(env)
		if err != nil {
			return nil, err
		}
		swap(l.(*RWLock))
		return l, nil
	}
}

// brokenRWLockWriterIgnoresReadersEntry is "broken-rwlock-writer-ignores-readers".
var brokenRWLockWriterIgnoresReadersEntry = Entry{Name: "broken-rwlock-writer-ignores-readers", Broken: true, Shape: ShapeRWLock,
	Factory:     brokenRWFactory(func(l *RWLock) { l.write = rwWriteIgnoresReaders }),
	Description: "read-write lock whose write acquire checks only for another writer: a writer is granted while readers hold the key"}

// brokenRWLockReadersIgnoreWriterEntry is "broken-rwlock-readers-ignore-writer".
var brokenRWLockReadersIgnoreWriterEntry = Entry{Name: "broken-rwlock-readers-ignore-writer", Broken: true, Shape: ShapeRWLock,
	Factory:     brokenRWFactory(func(l *RWLock) { l.read = rwReadIgnoresWriter }),
	Description: "read-write lock whose read acquire checks for no writer: a reader is granted while a writer holds the key"}
