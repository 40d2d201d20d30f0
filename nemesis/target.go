package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/lockcheck/lockcheck/cluster"
)

// Node targets (Config.Targets, --nemesis-targets): which nodes a fault
// that acts on Redis nodes picks at each start.
const (
	TargetOne       = "one"       // a primary (default)
	TargetMinority  = "minority"  // fewer than half the nodes, primaries first
	TargetMajority  = "majority"  // more than half the nodes, primaries first
	TargetPrimaries = "primaries" // every node that serves writes
	TargetAll       = "all"       // every node
)

// Targets are the --nemesis-targets values.
var Targets = []string{TargetOne, TargetMinority, TargetMajority, TargetPrimaries, TargetAll}

// target remembers the nodes a fault acts on from Start until Stop, which
// may run on another goroutine (healing at the end of a run).
type target struct {
	mu    sync.Mutex
	nodes []*cluster.Node
}

func (t *target) set(ns ...*cluster.Node) {
	t.mu.Lock()
	t.nodes = ns
	t.mu.Unlock()
}

// take returns the nodes and forgets them: a second Stop does nothing.
func (t *target) take() []*cluster.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns := t.nodes
	t.nodes = nil
	return ns
}

// takeOne returns the one node of a fault that acts on one, or nil.
func (t *target) takeOne() *cluster.Node {
	if ns := t.take(); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

// start picks the nodes (env.Targets), remembers them and acts on each;
// it names them.
func (t *target) start(ctx context.Context, env Env, rng *rand.Rand, act func(*cluster.Node) error) ([]string, error) {
	ns, err := pickNodes(ctx, env, rng)
	if err != nil {
		return nil, err
	}
	t.set(ns...)
	var names []string
	var errs []error
	for _, n := range ns {
		names = append(names, n.Name)
		errs = append(errs, act(n))
	}
	return names, errors.Join(errs...)
}

// stop undoes start on each node it acted on.
func (t *target) stop(undo func(*cluster.Node) error) error {
	var errs []error
	for _, n := range t.take() {
		errs = append(errs, undo(n))
	}
	return errors.Join(errs...)
}

// pickNodes returns the nodes env.Targets names, chosen by rng: primaries
// (the nodes that serve writes: the sentinel master, the cluster's
// masters, every node of the other topologies) first.
func pickNodes(ctx context.Context, env Env, rng *rand.Rand) ([]*cluster.Node, error) {
	c := env.Cluster
	if c == nil || len(c.Nodes) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	primaries, err := primaryNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	rng.Shuffle(len(primaries), func(i, j int) { primaries[i], primaries[j] = primaries[j], primaries[i] })
	var rest []*cluster.Node
	for _, i := range rng.Perm(len(c.Nodes)) {
		if !slices.Contains(primaries, c.Nodes[i]) {
			rest = append(rest, c.Nodes[i])
		}
	}
	ordered := append(primaries, rest...)
	n := len(c.Nodes)
	switch env.Targets {
	case "", TargetOne:
		return ordered[:1], nil
	case TargetMinority:
		return ordered[:max(1, (n-1)/2)], nil
	case TargetMajority:
		return ordered[:n/2+1], nil
	case TargetPrimaries:
		return primaries, nil
	case TargetAll:
		return ordered, nil
	}
	return nil, fmt.Errorf("unknown --nemesis-targets %q", env.Targets)
}

// primaryNodes are the nodes that serve writes now.
func primaryNodes(ctx context.Context, c *cluster.Cluster) ([]*cluster.Node, error) {
	switch {
	case c.External():
		return c.Primaries(), nil
	case len(c.Sentinels) > 0:
		m, err := c.Master(ctx)
		return []*cluster.Node{m}, err
	case c.Topology == cluster.RedisCluster:
		shards, err := c.Shards(ctx)
		var ms []*cluster.Node
		for _, s := range shards {
			ms = append(ms, s.Master)
		}
		return ms, err
	}
	return slices.Clone(c.Nodes), nil
}
