package nemesis

import (
	"context"
	"math/rand/v2"
)

// pauseClient is pause-client, and pause-holder when inSection.
type pauseClient struct {
	env       Env
	inSection bool
}

func (p *pauseClient) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	return procs(p.env.Clients.PauseClients(rng, clientsPerFault, p.env.TTL*3/2, p.inSection)), nil
}

func (p *pauseClient) Stop(context.Context) error { p.env.Clients.HealClients(); return nil }

// pauseClientKind is the "pause-client" fault.
var pauseClientKind = Kind{Needs: Needs{Clients: true}, Name: "pause-client", Description: "a holder stops between its acquire and its write for 1.5x the TTL (a GC pause, watchdog included), then writes",
	New: func(e Env) (Fault, error) { return &pauseClient{env: e}, nil }}

// pauseHolderKind is the "pause-holder" fault.
var pauseHolderKind = Kind{Needs: Needs{Clients: true}, Name: "pause-holder", Description: "a holder stops in the middle of its critical section for 1.5x the TTL (watchdog included); on waking it checks its lease before it touches the resource again, while its watchdog's overdue extend goes out",
	New: func(e Env) (Fault, error) { return &pauseClient{env: e, inSection: true}, nil }}
