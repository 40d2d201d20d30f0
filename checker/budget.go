package checker

import (
	"sync/atomic"

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
