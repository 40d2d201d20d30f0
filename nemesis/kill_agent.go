package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
)

// killAgent is kill-agent: a host of clients dies (SIGKILL, the pod
// deleted) and comes back.
type killAgent struct{ env Env }

func (k *killAgent) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	if k.env.Agents == nil {
		return nil, errors.New("kill-agent needs clients on agents (--agents N)")
	}
	return k.env.Agents.KillAgents(rng, k.env.AgentTargets), nil
}

func (k *killAgent) Stop(ctx context.Context) error {
	if k.env.Agents == nil {
		return nil
	}
	return k.env.Agents.ReviveAgents(ctx)
}

// killAgentKind is the "kill-agent" fault.
var killAgentKind = Kind{Needs: Needs{Agents: true}, Name: "kill-agent",
	Description: "SIGKILL an agent (--nemesis-targets agent:one|minority|all), as a crashed host; its ops in flight are info; at the end of the window it rejoins, its clients under new ids (needs --agents)",
	New:         func(e Env) (Fault, error) { return &killAgent{env: e}, nil }}
