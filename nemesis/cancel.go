package nemesis

import (
	"math/rand/v2"
)

// ClientCancel is the client fault that cancels ops in flight (cancel).
const ClientCancel = "cancel"

// ClientTally is the Clients of a run whose clients count what a client
// fault did to them, read at each of its stops (cancel's figures: the
// wire inside the client is where they are seen). Clients on agents
// count them too, each agent asked for its own (agent.remoteClients).
type ClientTally interface {
	// Tally returns the counts of kind's fault since the last call.
	Tally(kind string) map[string]int64
}

// cancelKind is the "cancel" fault: for the acquires and releases of 3
// clients in the window, the reply of a command that reached Redis is
// held on the connection the client dialed, the caller's context is
// cancelled meanwhile, and the reply is released a quarter TTL later
// down the same connection: a client that gave up on it but kept the
// connection reads it as the reply of its next command. D is the hold;
// the workload keeps it under half the op timeout, so that a client
// that waits reads it as its own.
var cancelKind = Kind{Name: "cancel", Needs: Needs{Clients: true, CrashesClients: true},
	Description: "cancel the acquires and releases of 3 clients in flight: each reply is held on the wire after Redis applied the command, the caller's context cancelled meanwhile, and the reply released TTL/4 later down the same connection (a client that kept it without reading reads it late, as its next command's)",
	New: func(e Env) (Fault, error) {
		// Its figures (talliedFault): ops cancelled while their reply
		// was held (history.CancelledApplied) and commands sent behind
		// such a reply (history.SentBehindCancel).
		return &talliedFault{clientFault: clientFault{env: e, what: func(_ *rand.Rand, e Env) (ClientFault, string) {
			return ClientFault{Kind: ClientCancel, D: e.TTL / 4}, ""
		}}, kind: ClientCancel}, nil
	}}
