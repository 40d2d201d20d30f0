package agent

import "github.com/lockcheck/lockcheck/workload"

// agentPlan is what the coordinator gives an agent: its share of the
// clients and everything they need.
type agentPlan struct {
	Index    int             `json:"index"`
	Lock     string          `json:"lock"`
	Workload workload.Config `json:"workload"`
	Access   Access          `json:"access"`
	// Base is the run's process id of the agent's client 0; Total the
	// run's clients: local id l is the run's l/n*Total + Base + l%n,
	// which a crashed client's successor (l + n) keeps unique.
	Base  int `json:"base"`
	Total int `json:"total"`
	// Epoch is the coordinator's clock zero (Unix ns): the agent's clock
	// reads from it, so that clocks that agree need no correction.
	Epoch   int64 `json:"epoch"`
	Crashes bool  `json:"crashes,omitempty"`
	// Gen counts the agent's rejoins: each has process ids of its own.
	Gen int `json:"gen,omitempty"`
}

// genStride is how many generations of a client slot (a crashed
// client's successors) one agent generation's process ids leave room for.
const genStride = 1000

// process maps a local client id to the run's.
func (p *agentPlan) process(id int) int {
	n := p.Workload.Clients
	if id < 0 || n == 0 {
		return id
	}
	return (id/n+p.Gen*genStride)*p.Total + p.Base + id%n
}
