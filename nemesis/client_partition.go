package nemesis

import (
	"context"
	"math/rand/v2"
)

// clientPartition cuts clients off Redis, holders first: their commands,
// their watchdog's extends among them, are not sent and time out after
// the op timeout (workload.Runner.CutClients), while the leases they hold
// run out on Redis and pass to others.
type clientPartition struct{ env Env }

func (c *clientPartition) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	return procs(c.env.Clients.CutClients(rng, clientsPerFault)), nil
}

func (c *clientPartition) Stop(context.Context) error { c.env.Clients.HealClients(); return nil }

// clientPartitionKind is the "client-partition" fault.
var clientPartitionKind = Kind{Needs: Needs{CrashesClients: true, Clients: true}, Name: "client-partition",
	Description: "cut 3 clients (holders first) off Redis for the window: their commands, extends and releases time out unsent, and their leases pass to others",
	New:         func(e Env) (Fault, error) { return &clientPartition{env: e}, nil }}
