package harness

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// fitsAgents refuses what agents cannot play: a lock they cannot build by
// name, a fault that acts inside this process's Redis client, fewer
// clients than agents.
func (p *plan) fitsAgents(e lockimpl.Entry) error {
	n := p.cfg.Agents
	switch {
	case n == 0 && p.nemesis.Needs().Agents:
		return fmt.Errorf("--nemesis %s acts on agents: run the clients on agents (--agents N)", strings.Join(p.nemesis.Faults, ","))
	case n == 0:
		return nil
	case n < 0:
		return fmt.Errorf("--agents %d: want a positive count", n)
	case p.workload.Clients < n:
		return fmt.Errorf("--agents %d with --clients %d: every agent needs a client", n, p.workload.Clients)
	case p.cfg.Factory != nil || e.OwnClient:
		return fmt.Errorf("--agents: lock %s is built here only; agents build a built-in lock by name (see lockcheck list)", e.Name)
	case p.cfg.Metrics != "":
		return errors.New("--agents with --metrics: the clients' counters are on the agents; run without --metrics")
	case p.cfg.Token == "" && p.cfg.Spawn == "" && n > 0:
		return errors.New("--agents needs a token: set LOCKCHECK_AGENT_TOKEN (the same on every agent)")
	}
	if _, err := lockimpl.All().Lookup(e.Name); err != nil {
		return fmt.Errorf("--agents: lock %s is not built in; agents build a built-in lock by name (see lockcheck list)", e.Name)
	}
	if p.cfg.Token == "" {
		p.cfg.Token = randomToken()
	}
	if p.cfg.Cluster.External.TLS.Enabled || p.cfg.Cluster.External.TLS.CA != "" {
		return errors.New("--agents with an external Redis over TLS: agents reach Redis without TLS so far; run without --agents, or a Redis without TLS")
	}
	if p.workload.Rate > 0 {
		return errors.New("--agents with --rate: the open model is not split across agents yet; use the closed model")
	}
	return nil
}

// randomToken is a token for agents the coordinator spawns itself.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
