package nemesis

import (
	"context"
	"math/rand/v2"
)

// crashClient is crash-client.
type crashClient struct{ env Env }

func (c *crashClient) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	return procs(c.env.Clients.CrashClients(rng, clientsPerFault)), nil
}

func (c *crashClient) Stop(context.Context) error { c.env.Clients.HealClients(); return nil }

// crashClientKind is the "crash-client" fault.
var crashClientKind = Kind{Needs: Needs{CrashesClients: true, Clients: true}, Name: "crash-client", Description: "a client dies right before its first Redis command after one that succeeded (while it may hold a lock) and never releases",
	New: func(e Env) (Fault, error) { return &crashClient{env: e}, nil }}
