package nemesis

import (
	"sync"

	"github.com/lockcheck/lockcheck/cluster"
)

// target remembers the node a fault acts on from Start until Stop, which
// may run on another goroutine (healing at the end of a run).
type target struct {
	mu   sync.Mutex
	node *cluster.Node
}

func (t *target) set(n *cluster.Node) {
	t.mu.Lock()
	t.node = n
	t.mu.Unlock()
}

// take returns the node and forgets it: a second Stop does nothing.
func (t *target) take() *cluster.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.node
	t.node = nil
	return n
}
