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
	step, per := pm.Step, int64(n/8+128) // the bitset, the entry, the slices' headers
	pm.Step = func(state, input, output any) (bool, any) {
		if b.over.Load() {
			return false, state
		}
		ok, next := step(state, input, output)
		if ok && b.used.Add(per+int64(len(next.(stateSet)))*stateBytes) > b.limit {
			b.over.Store(true)
			return false, state
		}
		return ok, next
	}
	return pm
}
