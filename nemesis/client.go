package nemesis

import (
	"context"
	"math/rand/v2"
	"strconv"
)

// clientsPerFault is how many clients one pause-client or crash-client
// start acts on.
const clientsPerFault = 3

// pauseClient is pause-client, and pause-holder when inSection.
type pauseClient struct {
	env       Env
	inSection bool
}

func (p *pauseClient) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	return procs(p.env.Clients.PauseClients(rng, clientsPerFault, p.env.TTL*3/2, p.inSection)), nil
}

func (p *pauseClient) Stop(context.Context) error { p.env.Clients.HealClients(); return nil }

type crashClient struct{ env Env }

func (c *crashClient) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	return procs(c.env.Clients.CrashClients(rng, clientsPerFault)), nil
}

func (c *crashClient) Stop(context.Context) error { c.env.Clients.HealClients(); return nil }

func procs(ids []int) []string {
	var ts []string
	for _, id := range ids {
		ts = append(ts, "p"+strconv.Itoa(id))
	}
	return ts
}
