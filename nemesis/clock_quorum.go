package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockcheck/lockcheck/history"
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
//
// kill-quorum is the same with a restart for the jump: the node of the
// bare majority is SIGKILLed and restarted at once, without its keys (no
// persistence), as redsync #186 describes: a node that crashed before
// persisting lets a second client win a majority.
type clockQuorum struct {
	env Env
	// restart: kill-quorum.
	restart bool

	mu     sync.Mutex
	down   []*cluster.Node
	jumper *cluster.Node
	cancel context.CancelFunc
	done   chan error
	// events is what the half-time read from the majority node: the
	// leases its jump expired (history.ExpiredByClock) or its restart dropped
	// (history.LostAtRestart), each live on a bare majority until then.
	events map[string]int64
}

// Events is the last window's count of the bare majority's leases that
// the jump expired, or the restart dropped, on the majority node.
func (c *clockQuorum) Events() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.events
	c.events = nil
	return e
}

// counted keeps the half-time's count.
func (c *clockQuorum) counted(figure string, n int64) {
	c.mu.Lock()
	c.events = map[string]int64{figure: n}
	c.mu.Unlock()
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
	if c.restart {
		targets = append(targets, fmt.Sprintf("%s restarted empty at %v", jumper.Name, c.env.Window/2))
	} else {
		targets = append(targets, fmt.Sprintf("%s +%v at %v", jumper.Name, c.jump(), c.env.Window/2))
	}
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
		// Stop waits for half-time's restarts rather than cancel them
		// half done (a node left down for the rest of the run).
		done <- c.comeBack(context.WithoutCancel(wctx), true)
	}()
	return targets, nil
}

// jump is how far the majority node's clock jumps (clock-quorum).
func (c *clockQuorum) jump() time.Duration { return 2 * c.env.TTL }

// comeBack restarts the minority (empty); at half-time it also plays the
// majority node's part: its clock jumps, or (kill-quorum) it is killed
// and comes back empty with the minority.
func (c *clockQuorum) comeBack(ctx context.Context, halfTime bool) error {
	c.mu.Lock()
	down, jumper := c.down, c.jumper
	c.down = nil
	c.mu.Unlock()
	var errs []error
	var held cluster.Holdings
	var heldErr error
	var at time.Time
	if halfTime && c.restart && jumper != nil {
		// Killed first, then back with the minority, all at once: the
		// bare majority's leases are still live when three empty
		// nodes answer. What it held is read just before, its writes
		// paused until the kill.
		held, heldErr = c.env.Cluster.HoldsFrozen(ctx, jumper, time.Second)
		at = time.Now()
		errs = append(errs, jumper.Kill())
		down = append(down, jumper)
	}
	restarted := make([]error, len(down))
	var wg sync.WaitGroup
	for i, n := range down {
		wg.Add(1)
		go func() {
			defer wg.Done()
			restarted[i] = n.Restart(ctx, c.env.Cluster.Password)
		}()
	}
	wg.Wait()
	errs = append(errs, restarted...)
	if halfTime && c.restart && jumper != nil && heldErr == nil && errors.Join(errs...) == nil {
		// A lease that could have run out by the restart is no count.
		c.counted(history.LostAtRestart, cluster.LostFrom(held, nil, time.Since(at)+100*time.Millisecond))
	}
	if halfTime && !c.restart && jumper != nil {
		before, berr := c.env.Cluster.Holds(ctx, jumper)
		at := time.Now()
		err := jumper.Clock.Set(c.jump(), 0)
		errs = append(errs, err)
		if berr == nil && err == nil {
			if after, aerr := c.env.Cluster.Holds(ctx, jumper); aerr == nil {
				c.counted(history.ExpiredByClock, cluster.LostFrom(before, after, time.Since(at)+100*time.Millisecond))
			}
		}
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
	err = errors.Join(err, c.comeBack(ctx, false))
	if jumper != nil && !c.restart {
		err = errors.Join(err, jumper.Clock.Set(0, 0))
	}
	return err
}

// clockQuorumKind is the "clock-quorum" fault.
var clockQuorumKind = Kind{Needs: Needs{Redis: true, Clock: true, Servers: true}, Name: "clock-quorum", Topologies: []string{cluster.Redlock}, Description: "Kleppmann's Redlock scenario (topology redlock): a minority of the masters down, so leases reach a bare majority; half-way through, the minority returns empty and one node of that majority jumps its clock past the TTL",
	New: func(e Env) (Fault, error) { return &clockQuorum{env: e}, nil }}

// killQuorumKind is the "kill-quorum" fault.
var killQuorumKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "kill-quorum", Topologies: []string{cluster.Redlock}, Description: "redsync #186 (topology redlock): a minority of the masters down, so leases reach a bare majority; half-way through, the minority returns empty and one node of that majority is SIGKILLed and restarted without the keys it held (no persistence)",
	New: func(e Env) (Fault, error) { return &clockQuorum{env: e, restart: true}, nil }}
