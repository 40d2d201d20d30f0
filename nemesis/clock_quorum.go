package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
)

// clockQuorum is Kleppmann's scenario against Redlock ("How to do
// distributed locking", 2016): a minority of the masters is unreachable
// (killed: they come back empty, as if the requests had been lost on the
// way), so leases taken meanwhile reach a bare majority; half-way through
// the window the minority comes back and one node of that majority jumps
// its clock forward past the TTL. Its keys expire at once, and a second
// client can reach a majority (the jumped node and the returned ones)
// while the first client's lease is still valid by its own clock.
type clockQuorum struct {
	env Env

	mu     sync.Mutex
	down   []*cluster.Node
	jumper *cluster.Node
	cancel context.CancelFunc
	done   chan error
}

func (c *clockQuorum) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	cl := c.env.Cluster
	if cl == nil || len(cl.Nodes) < 3 || len(cl.Sentinels) > 0 {
		return nil, errors.New("clock-quorum needs --topology redlock with at least 3 nodes")
	}
	nodes := cl.Nodes
	quorum := len(nodes)/2 + 1
	perm := rng.Perm(len(nodes))
	down := make([]*cluster.Node, 0, len(nodes)-quorum)
	targets := []string{}
	for _, i := range perm[:len(nodes)-quorum] {
		down = append(down, nodes[i])
		targets = append(targets, nodes[i].Name+" down")
	}
	jumper := nodes[perm[len(nodes)-quorum]]
	jump := 2 * c.env.TTL
	targets = append(targets, fmt.Sprintf("%s +%v at %v", jumper.Name, jump, c.env.Window/2))
	for _, n := range down {
		if err := n.Kill(); err != nil {
			return targets, err
		}
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	c.mu.Lock()
	c.down, c.jumper, c.cancel, c.done = down, jumper, cancel, done
	c.mu.Unlock()
	go func() {
		t := time.NewTimer(c.env.Window / 2)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wctx.Done():
			done <- nil
			return
		}
		done <- c.comeBack(wctx, jump)
	}()
	return targets, nil
}

// comeBack restarts the minority (empty) and jumps the clock.
func (c *clockQuorum) comeBack(ctx context.Context, jump time.Duration) error {
	c.mu.Lock()
	down, jumper := c.down, c.jumper
	c.down = nil
	c.mu.Unlock()
	var errs []error
	for _, n := range down {
		errs = append(errs, n.Restart(ctx, c.env.Cluster.Password))
	}
	if jumper != nil && jump != 0 {
		errs = append(errs, jumper.Clock.Set(jump, 0))
	}
	return errors.Join(errs...)
}

func (c *clockQuorum) Stop(ctx context.Context) error {
	c.mu.Lock()
	cancel, done, jumper := c.cancel, c.done, c.jumper
	c.cancel, c.done, c.jumper = nil, nil, nil
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	err := <-done
	// Stopped before half-time: the minority is still down.
	err = errors.Join(err, c.comeBack(ctx, 0))
	if jumper != nil {
		err = errors.Join(err, jumper.Clock.Set(0, 0))
	}
	return err
}

// clockQuorumKind is the "clock-quorum" fault.
var clockQuorumKind = Kind{Needs: Needs{Redis: true, Clock: true, Servers: true}, Name: "clock-quorum", Topologies: []string{cluster.Redlock}, Description: "Kleppmann's Redlock scenario (topology redlock): a minority of the masters down, so leases reach a bare majority; half-way through, the minority returns empty and one node of that majority jumps its clock past the TTL",
	New: func(e Env) (Fault, error) { return &clockQuorum{env: e}, nil }}
