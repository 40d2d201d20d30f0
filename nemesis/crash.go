package nemesis

import "math/rand/v2"

// crashClientKind is the "crash-client" fault.
var crashClientKind = ClientKind(Kind{Needs: Needs{CrashesClients: true}, Name: "crash-client", Description: "a client dies right before its first Redis command after one that succeeded (while it may hold a lock) and never releases"},
	func(*rand.Rand, Env) (ClientFault, string) { return ClientFault{Kind: ClientCrash}, "" })
