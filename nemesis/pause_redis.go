package nemesis

import (
	"context"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// pauseRedis is pause-redis.
type pauseRedis struct {
	env Env
	target
}

func (p *pauseRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	return p.start(ctx, p.env, rng, (*cluster.Node).Pause)
}

func (p *pauseRedis) Stop(context.Context) error { return p.stop((*cluster.Node).Resume) }

// pauseRedisKind is the "pause-redis" fault.
var pauseRedisKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "pause-redis", Description: "SIGSTOP a Redis node (--nemesis-targets), SIGCONT at the end of the window",
	New: func(e Env) (Fault, error) { return &pauseRedis{env: e}, nil }}
