package nemesis

import (
	"context"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// pickShard is a cluster master with a live replica, chosen by rng.
func pickShard(ctx context.Context, c *cluster.Cluster, rng *rand.Rand) (cluster.ClusterShard, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return cluster.ClusterShard{}, err
	}
	return shards[rng.IntN(len(shards))], nil
}
