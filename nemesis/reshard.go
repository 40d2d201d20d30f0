package nemesis

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/lockcheck/lockcheck/cluster"
)

// reshard moves a slot that holds lock keys from its master to another
// while clients use it (cluster.Reshard): keys already moved answer
// through ASK redirects, the rest from the source, with their TTLs. The
// slot stays where it went; Stop has nothing to heal.
type reshard struct{ env Env }

func (r *reshard) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	slot, from, to, err := r.env.Cluster.Reshard(ctx, rng)
	var names []string
	if from != nil && to != nil {
		names = []string{from.Name, to.Name, "slot " + strconv.Itoa(slot)}
	}
	return names, err
}

func (r *reshard) Stop(context.Context) error { return nil }

// reshardKind is the "reshard" fault.
var reshardKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "reshard", Topologies: []string{cluster.RedisCluster}, Description: "move a slot that holds lock keys to another master while clients use it (topology cluster): MIGRATING/IMPORTING, MIGRATE, ASK redirects",
	New: func(e Env) (Fault, error) { return &reshard{env: e}, nil }}
