package nemesis

import "math/rand/v2"

// ClientStarve is the client fault that starves renewals (starve).
const ClientStarve = "starve"

// talliedFault is a client fault whose clients count its chance
// (ClientTally), read at each of its stops.
type talliedFault struct {
	clientFault
	kind string
}

// Events is what the clients counted of the fault in the window.
func (c *talliedFault) Events() map[string]int64 {
	if t, ok := c.env.Clients.(ClientTally); ok {
		return t.Tally(c.kind)
	}
	return nil
}

// starved is how many clients one starve start acts on: more than
// pause-client's, as only those of them in a critical section meet it.
const starved = 8

// starveKind is the "starve" fault: for 8 clients in the window, each
// command their lock's client sends while they are in a critical
// section (a renewal: the holder itself sends none there) is held back
// inside the client for 1.5 TTL before it goes on, its own timeout
// unheeded (a starved renewal does not run its timer either), while the
// holder works on and Redis and the network stay healthy: the renewal
// slowed apart from its holder, where a pause stops both. The lease
// ends meanwhile; a holder that checks its lease's end leaves, one that
// trusts its renewal works on. Counted: history.RenewalStarved.
var starveKind = Kind{Name: ClientStarve, Needs: Needs{Clients: true, CrashesClients: true},
	Description: "starve the renewals of 8 clients: each command their lock sends while they are in a critical section is held back inside the client for 1.5x the TTL, past the lease's end, while the holder works on (Redis and the network healthy)",
	New: func(e Env) (Fault, error) {
		return &talliedFault{clientFault: clientFault{env: e, what: func(_ *rand.Rand, e Env) (ClientFault, string) {
			return ClientFault{Kind: ClientStarve, N: starved, D: e.TTL * 3 / 2}, ""
		}}, kind: ClientStarve}, nil
	}}
