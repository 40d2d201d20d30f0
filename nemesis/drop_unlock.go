package nemesis

import "math/rand/v2"

// ClientDropUnlock is the client fault that drops pub/sub deliveries
// (drop-unlock).
const ClientDropUnlock = "drop-unlock"

// dropUnlockKind is the "drop-unlock" fault: while the window is open,
// every pub/sub message Redis delivers to a subscriber connection of the
// lock's client (an unlock notice, to a waiter woken by pub/sub) is
// dropped on the wire: the connection is cut before the client reads it,
// as a reset would. The client reconnects and subscribes again (go-redis
// does), the message lost; a waiter that sleeps only for it sleeps on,
// one that polls besides wakes at its poll. Redis and every other
// connection stay healthy. Counted: history.UnlockDroppedWaiting.
var dropUnlockKind = Kind{Name: ClientDropUnlock, Needs: Needs{Clients: true, CrashesClients: true},
	Description: "drop the pub/sub messages Redis delivers to the lock's subscriber connections (a waiter's unlock notice): each such connection is cut before its client reads the message, as a reset on the wire; the client resubscribes, the message lost",
	New: func(e Env) (Fault, error) {
		return &talliedFault{clientFault: clientFault{env: e, what: func(_ *rand.Rand, e Env) (ClientFault, string) {
			return ClientFault{Kind: ClientDropUnlock}, ""
		}}, kind: ClientDropUnlock}, nil
	}}
