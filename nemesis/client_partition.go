package nemesis

import "math/rand/v2"

// clientPartitionKind is the "client-partition" fault: it cuts clients
// off Redis, holders first: their commands, their watchdog's extends
// among them, are not sent and time out after the op timeout, while the
// leases they hold run out on Redis and pass to others.
var clientPartitionKind = ClientKind(Kind{Needs: Needs{CrashesClients: true}, Name: "client-partition",
	Description: "cut 3 clients (holders first) off Redis for the window: their commands, extends and releases time out unsent, and their leases pass to others"},
	func(*rand.Rand, Env) (ClientFault, string) { return ClientFault{Kind: ClientCut}, "" })
