package nemesis

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
)

// killRedis is kill-redis. On a node restarted without persistence, it
// reads what the node holds just before it kills it, writes paused from
// the read to the kill: the leases live then are what the restart drops,
// for the node starts empty (LostAtRestart). With persistence, what the
// node loads cannot be read apart from what the clients, back at once,
// do to it, and the figure is not counted.
type killRedis struct {
	env Env
	target
	lost   int64
	events map[string]int64
}

// Events is the last window's count of leases a restart dropped.
func (k *killRedis) Events() map[string]int64 {
	e := k.events
	k.events = nil
	return e
}

// Hold: the nodes stay down for the restart delay.
func (k *killRedis) Hold() time.Duration { return k.env.RestartDelay }

func (k *killRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	k.lost = -1
	empty := k.env.Cluster.Persistence == "none"
	at := time.Now()
	var before []cluster.Holdings
	names, err := k.start(ctx, k.env, rng, func(n *cluster.Node) error {
		if empty {
			if h, err := k.env.Cluster.HoldsFrozen(ctx, n, time.Second); err == nil {
				before = append(before, h)
			}
		}
		return n.Kill()
	})
	if empty && len(before) == len(names) {
		// Leases that expire before the restart are no loss.
		k.lost = 0
		for _, h := range before {
			k.lost += cluster.LostFrom(h, nil, time.Since(at)+k.env.RestartDelay+100*time.Millisecond)
		}
	}
	return names, err
}

func (k *killRedis) Stop(ctx context.Context) error {
	if k.lost >= 0 {
		k.events = map[string]int64{LostAtRestart: k.lost}
	}
	return k.stop(func(n *cluster.Node) error { return n.Restart(ctx, k.env.Cluster.Password) })
}

// killRedisKind is the "kill-redis" fault.
var killRedisKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "kill-redis", Description: "SIGKILL a Redis node (--nemesis-targets) and restart it after --restart-delay (data kept only with --persistence aof-*)",
	New: func(e Env) (Fault, error) { return &killRedis{env: e}, nil }}
