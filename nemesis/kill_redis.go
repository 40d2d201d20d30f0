package nemesis

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
)

// killRedis is kill-redis.
type killRedis struct {
	env Env
	target
}

// Hold: the nodes stay down for the restart delay.
func (k *killRedis) Hold() time.Duration { return k.env.RestartDelay }

func (k *killRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	return k.start(ctx, k.env, rng, (*cluster.Node).Kill)
}

func (k *killRedis) Stop(ctx context.Context) error {
	return k.stop(func(n *cluster.Node) error { return n.Restart(ctx, k.env.Cluster.Password) })
}

// killRedisKind is the "kill-redis" fault.
var killRedisKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "kill-redis", Description: "SIGKILL a Redis node (--nemesis-targets) and restart it after --restart-delay (data kept only with --persistence aof-*)",
	New: func(e Env) (Fault, error) { return &killRedis{env: e}, nil }}
