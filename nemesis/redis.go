package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// pickNode returns a node chosen by rng: in the sentinel topology, the
// master (a fault on a replica rarely touches a lock).
func pickNode(ctx context.Context, c *cluster.Cluster, rng *rand.Rand) (*cluster.Node, error) {
	if c == nil || len(c.Nodes) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	if len(c.Sentinels) > 0 {
		return c.Master(ctx)
	}
	return c.Nodes[rng.IntN(len(c.Nodes))], nil
}
