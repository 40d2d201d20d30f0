// Package ext holds what is added to one of lockcheck's registries
// (locks, faults, checkers, report sections, verify scenarios) beside its
// built-in entries: by a test with a throwaway one, or by a program that
// embeds lockcheck. Every path that reads the registry sees them.
package ext

import (
	"slices"
	"sync"
)

// Added is the entries added to one registry, in the order added.
type Added[T any] struct {
	mu    sync.Mutex
	items []*T
}

// Add adds t; the func it returns removes it again.
func (a *Added[T]) Add(t T) (remove func()) {
	p := &t
	a.mu.Lock()
	a.items = append(a.items, p)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.items = slices.DeleteFunc(a.items, func(q *T) bool { return q == p })
	}
}

// With returns builtin followed by the entries added.
func (a *Added[T]) With(builtin []T) []T {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(builtin)
	for _, p := range a.items {
		out = append(out, *p)
	}
	return out
}
