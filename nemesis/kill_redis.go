package nemesis

import (
	"context"
	"math/rand/v2"
	"time"
)

// killRedis is kill-redis.
type killRedis struct {
	env Env
	target
}

// Hold: the node stays down for the restart delay.
func (k *killRedis) Hold() time.Duration { return k.env.RestartDelay }

func (k *killRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	n, err := pickNode(ctx, k.env.Cluster, rng)
	if err != nil {
		return nil, err
	}
	k.set(n)
	return []string{n.Name}, n.Kill()
}

func (k *killRedis) Stop(ctx context.Context) error {
	n := k.take()
	if n == nil {
		return nil
	}
	return n.Restart(ctx, k.env.Cluster.Password)
}

// killRedisKind is the "kill-redis" fault.
var killRedisKind = Kind{Name: "kill-redis", Description: "SIGKILL a Redis node and restart it after --restart-delay (data kept only with --persistence aof-*)", Redis: true,
	new: func(e Env) (Fault, error) { return &killRedis{env: e}, nil }}
