package nemesis

import (
	"context"
	"math/rand/v2"
)

// pauseRedis is pause-redis.
type pauseRedis struct {
	env Env
	target
}

func (p *pauseRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	n, err := pickNode(ctx, p.env.Cluster, rng)
	if err != nil {
		return nil, err
	}
	p.set(n)
	return []string{n.Name}, n.Pause()
}

func (p *pauseRedis) Stop(context.Context) error {
	n := p.take()
	if n == nil {
		return nil
	}
	return n.Resume()
}

// pauseRedisKind is the "pause-redis" fault.
var pauseRedisKind = Kind{Name: "pause-redis", Description: "SIGSTOP a Redis node, SIGCONT at the end of the window", Redis: true,
	new: func(e Env) (Fault, error) { return &pauseRedis{env: e}, nil }}
