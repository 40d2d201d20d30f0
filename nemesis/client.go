package nemesis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"
)

// clientsPerFault is how many clients one pause-client or crash-client
// start acts on.
const clientsPerFault = 3

// procs names clients as targets: p3, p17.
func procs(ids []int) []string {
	var ts []string
	for _, id := range ids {
		ts = append(ts, "p"+strconv.Itoa(id))
	}
	return ts
}

// ClientFault is a fault the clients play on themselves: a value, so
// that an agent forwards it as it is and the clients' side reads its
// kind in one place (workload.Runner.Play).
type ClientFault struct {
	// Kind is what the chosen clients do: ClientPause, ClientCrash,
	// ClientCut, ClientSkew, or a kind registered with the workload
	// (workload.RegisterClientFault).
	Kind string `json:"kind"`
	// N is how many clients it acts on.
	N int `json:"n"`
	// D is a pause's length; InSection, that it is taken in the middle of
	// a critical section rather than between acquire and write.
	D         time.Duration `json:"d,omitempty"`
	InSection bool          `json:"in_section,omitempty"`
	// Rate and Jump skew a client's clock: it runs at Rate and is Jump
	// behind.
	Rate float64       `json:"rate,omitempty"`
	Jump time.Duration `json:"jump,omitempty"`
}

// The client faults the workload plays.
const (
	ClientPause = "pause"
	ClientCrash = "crash"
	ClientCut   = "cut"
	ClientSkew  = "skew"
)

// ClientKind makes k a client fault: each start plays the fault what
// returns (on clientsPerFault clients unless it sets N) and names the
// clients it acted on, then note if what gives one; each stop heals the
// clients. A new client fault is such a Kind and its workload case.
func ClientKind(k Kind, what func(rng *rand.Rand, env Env) (f ClientFault, note string)) Kind {
	k.Needs.Clients = true
	k.New = func(e Env) (Fault, error) { return &clientFault{env: e, what: what}, nil }
	return k
}

type clientFault struct {
	env  Env
	what func(rng *rand.Rand, env Env) (ClientFault, string)
}

func (c *clientFault) Start(_ context.Context, rng *rand.Rand) ([]string, error) {
	f, note := c.what(rng, c.env)
	if f.N == 0 {
		f.N = clientsPerFault
	}
	ids, err := c.env.Clients.Play(rng, f)
	targets := procs(ids)
	if note != "" {
		targets = append(targets, note)
	}
	return targets, err
}

func (c *clientFault) Stop(context.Context) error { c.env.Clients.HealClients(); return nil }
