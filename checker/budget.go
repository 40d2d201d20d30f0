package checker

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// A budget bounds the memory of one key's search. Porcupine keeps every
// state it reaches, with the set of ops linearized to reach it, in its
// cache until the search ends, so the cache is what grows (to gigabytes
// on a hot key whose ops are all indeterminate). Each state kept is
// charged: its members and a bitset of the ops; once the limit is passed
// the model refuses every op, porcupine unwinds without growing, and its
// answer is discarded: the key is unknown, for want of memory.
//
// What is kept: porcupine steps to a state, then looks for it (the same
// ops linearized, an Equal state) in its cache, and keeps it only if it
// is not there (checkSingle's cacheContains, the only caller of Equal).
// So a state is charged when the step reaches it and refunded when Equal
// finds it already kept: the charge is the cache's, not every state
// reached (which over-counted about 2.7 times). What is kept is charged
// twice over, for the collector's headroom: with GOGC=100 the heap grows
// to twice what is live before a collection, and the states porcupine
// stepped to and dropped are garbage until then.
type budget struct {
	limit int64 // bytes; 0 for none
	used  atomic.Int64
	over  atomic.Bool
	// watch, if set, is the process's memory measured: past its limit,
	// every key searching then is over, whatever its own charge says.
	watch *memWatch
}

// stateBytes is what one member of a stateSet takes (hashedState).
const stateBytes = 8 + 16 + 8 + 9*8

// spent reports whether the budget ran out.
func (b *budget) spent() bool { return b != nil && b.over.Load() }

// model returns pm charging b for a search of n ops; each search starts
// from nothing, since the one before it has freed its cache.
func (b *budget) model(pm porcupine.Model, n int) porcupine.Model {
	if b == nil || b.limit <= 0 {
		return pm
	}
	b.used.Store(0)
	step, equal, per := pm.Step, pm.Equal, int64(n/8+128) // the bitset, the entry, the slices' headers
	// last is the charge of the state the last step reached.
	var last atomic.Int64
	pm.Step = func(state, input, output any) (bool, any) {
		if b.over.Load() {
			return false, state
		}
		if b.watch.high() {
			b.over.Store(true)
			return false, state
		}
		ok, next := step(state, input, output)
		if !ok {
			return false, next
		}
		c := per + int64(len(next.(stateSet)))*stateBytes
		last.Store(c)
		if 2*b.used.Add(c) > b.limit {
			b.over.Store(true)
			return false, state
		}
		return ok, next
	}
	pm.Equal = func(a, c any) bool {
		if !equal(a, c) {
			return false
		}
		b.used.Add(-last.Swap(0)) // found in the cache: not kept
		return true
	}
	return pm
}

// memWatch bounds the check by what the process really holds, where the
// charges above are an estimate of porcupine's cache: measured on a
// key of slow and indeterminate ops at tolerance 0, the estimate let a
// search reach 17 GB of RSS under an 11.8 GiB budget (issue 52). Every
// watchEvery it reads the Go runtime's memory (mapped, less what was
// returned to the OS: the heap with its garbage, the stacks, the
// runtime's own), and past the limit it collects once (garbage does not
// count) and reads again: still past it, every budget it watches is
// over. The overshoot is then what a search allocates in watchEvery
// plus its unwinding (TestBudget_UnknownWithinMemory: peak RSS within
// the budget and budgetOverhead).
type memWatch struct {
	limit int64
	over  atomic.Bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

// watchEvery is how often memWatch reads the process's memory: a read
// costs about a microsecond.
const watchEvery = 5 * time.Millisecond

// watchMemory starts watching the process against limit (nil: no limit).
func watchMemory(limit int64) *memWatch {
	if limit <= 0 {
		return nil
	}
	w := &memWatch{limit: limit, stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		var forced time.Time
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				if processMemory() <= w.limit {
					w.over.Store(false)
				} else if !w.over.Load() || time.Since(forced) > time.Second {
					// A collection costs a whole mark: at most one a second
					// while the process stays past the limit.
					forced = time.Now()
					w.over.Store(collected() > w.limit)
				}
			}
		}
	}()
	return w
}

// high says whether the process is past the limit now.
func (w *memWatch) high() bool { return w != nil && w.over.Load() }

// end stops the watch.
func (w *memWatch) end() {
	if w != nil {
		close(w.stop)
		w.wg.Wait()
	}
}

// collected is processMemory after a collection that returns what it
// freed to the OS.
func collected() int64 {
	debug.FreeOSMemory()
	return processMemory()
}

// processMemory is the Go runtime's memory mapped and not returned to
// the OS: what its RSS is made of.
func processMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// boundedByMemory is ctx, cancelled once the process's memory passes
// limit (watchMemory; none if limit is 0), for a search that keeps no
// budget of its own states (the shapes' models: the semaphore's, the
// read-write lock's, the reentrant lock's); spent says whether it was
// the memory that ended it, and end stops the watch.
func boundedByMemory(ctx context.Context, limit int64) (_ context.Context, spent func() bool, end func()) {
	w := watchMemory(limit)
	if w == nil {
		return ctx, func() bool { return false }, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var tripped atomic.Bool // sticky: the watch resets once the search has let go
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if w.high() {
					tripped.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	return ctx, tripped.Load, func() { close(done); cancel(); w.end() }
}
