package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

// KillAgents kills the agents targets names (one, minority, all), chosen
// by rng: a spawned one by SIGKILL of its process, any other by asking it
// to SIGKILL itself.
func (c *Coordinator) KillAgents(rng *rand.Rand, targets string) []string {
	c.mu.Lock()
	stopping := c.stopping
	c.mu.Unlock()
	if stopping {
		return nil
	}
	// The agents still playing: not done, not lost.
	live := slices.DeleteFunc(c.joined(), func(ra *remoteAgent) bool {
		select {
		case <-ra.done:
			return true
		default:
			return false
		}
	})
	if len(live) == 0 {
		return nil
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	var names []string
	for _, ra := range live[:agentCount(targets, len(live))] {
		if c.spawned == nil || !c.spawned.kill(ra.index) {
			_ = ra.conn.Send(Msg{T: TDie})
		}
		c.mu.Lock()
		c.reviving = append(c.reviving, ra.index)
		c.mu.Unlock()
		names = append(names, fmt.Sprintf("agent%d", ra.index))
	}
	return names
}

// agentCount is how many of live agents targets (--nemesis-targets
// agent:one, minority or all) names.
func agentCount(targets string, live int) int {
	switch targets {
	case "minority":
		return max(1, (live-1)/2)
	case "all":
		return live
	}
	return 1
}

// ReviveAgents brings back the agents KillAgents killed that this
// coordinator spawned; others come back when their host restarts them
// (or never: the run goes on without them).
func (c *Coordinator) ReviveAgents(context.Context) error {
	c.mu.Lock()
	idx := slices.Clone(c.reviving)
	stopping := c.stopping
	if c.spawned == nil || stopping {
		c.reviving = nil
	}
	c.mu.Unlock()
	if c.spawned == nil || stopping {
		return nil
	}
	for _, i := range idx {
		// Its old connection must be seen lost before it rejoins.
		if ra := c.agentAt(i); ra != nil {
			select {
			case <-ra.done:
			case <-time.After(5 * time.Second):
			}
		}
		if err := c.spawned.restart(i); err != nil {
			return err
		}
	}
	return nil
}

// remoteClients is the client side of the faults when the clients are
// the agents': each fault goes to one live agent, picked by the seed,
// which plays it on its own clients.
type remoteClients struct{ c *Coordinator }

// Tally is nemesis.ClientTally for clients on agents: what kind's fault
// did to the clients of every live agent since it was last asked, summed
// (an agent lost takes its counts with it: the figures only undercount).
func (rc remoteClients) Tally(kind string) map[string]int64 {
	sum := map[string]int64{}
	for _, ra := range rc.c.live() {
		m, err := ra.conn.Call(Msg{T: TFault, Fault: &Fault{Kind: FaultTally, Tally: kind}}, faultTimeout)
		var got map[string]int64
		if err != nil || m.Error != "" || json.Unmarshal(m.Counts, &got) != nil {
			continue
		}
		for k, v := range got {
			sum[k] += v
		}
	}
	return sum
}

// faultTimeout bounds an agent's answer to a fault.
const faultTimeout = 5 * time.Second

func (rc remoteClients) Play(rng *rand.Rand, f nemesis.ClientFault) ([]int, error) {
	live := rc.c.live()
	if len(live) == 0 {
		return nil, nil
	}
	// The agents the fault acts on: one picked by the seed, unless
	// --nemesis-targets agent:minority or agent:all names more; each plays
	// it on n of its own clients.
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	var ids []int
	var errs []error
	for _, ra := range live[:agentCount(rc.c.cfg.AgentTargets, len(live))] {
		m, err := ra.conn.Call(Msg{T: TFault, Fault: &Fault{Kind: FaultClient, Seed: rng.Uint64(), Client: &f}}, faultTimeout)
		switch {
		case err == nil && m.Error != "":
			errs = append(errs, fmt.Errorf("agent %d: %s", ra.index, m.Error))
		case err == nil:
			ids = append(ids, m.IDs...)
		}
	}
	return ids, errors.Join(errs...)
}

// mirrorToxics has every toxic a fault puts on a node's client proxy
// played by the agents' own proxies for that node (latency, lost-reply):
// their clients do not dial this machine's.
func (c *Coordinator) mirrorToxics() {
	for _, n := range c.cfg.Cluster.Nodes {
		if n.Client == nil {
			continue
		}
		node := n.Addr
		n.Client.Mirror = func(t cluster.Toxic) error {
			js, _ := json.Marshal(t)
			var errs []error
			for _, ra := range c.live() {
				m, err := ra.conn.Call(Msg{T: TFault, Fault: &Fault{Kind: FaultToxic, Node: node, Toxic: js}}, faultTimeout)
				if err == nil && m.Error != "" {
					err = errors.New(m.Error)
				}
				if err != nil && !errors.Is(err, ErrLost) {
					errs = append(errs, fmt.Errorf("agent %d: toxic %s: %w", ra.index, t.Name, err))
				}
			}
			return errors.Join(errs...)
		}
	}
}

func (rc remoteClients) HealClients() {
	for _, ra := range rc.c.live() {
		_, _ = ra.conn.Call(Msg{T: TFault, Fault: &Fault{Kind: FaultHeal}}, faultTimeout)
	}
}
