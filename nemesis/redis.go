package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
)

// pickNode returns a node chosen by rng: in the sentinel topology, the
// master (a fault on a replica rarely touches a lock).
func pickNode(ctx context.Context, c *cluster.Cluster, rng *rand.Rand) (*cluster.Node, error) {
	if c == nil || len(c.Nodes) == 0 {
		return nil, errors.New("no redis node to act on")
	}
	if len(c.Sentinels) > 0 {
		return c.Master(ctx)
	}
	return c.Nodes[rng.IntN(len(c.Nodes))], nil
}

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
