package nemesis

import "math/rand/v2"

// ClientPool is the client fault that exhausts a client's connection
// pool (pool).
const ClientPool = "pool"

// pooled is how many clients one pool start acts on: as starve's, only
// those of them in a critical section meet it.
const pooled = 8

// poolKind is the "pool" fault: each client has a lock of its own whose
// go-redis client has a pool of two connections (the scenario sets
// it), and for 8 clients in the window, each time one enters its
// critical section the application's own traffic takes every
// connection of its pool (a blocking XREAD of a stream of its own, one
// a connection) for 1.5 TTL. The holder's renewals then wait in go-redis's
// pool for a connection (its PoolTimeout, the op timeout) past the
// lease's end, while the holder works on and Redis and the network stay
// healthy: starve's renewal held back, by the client's real pool. A
// holder that checks its lease's end leaves; one that trusts its
// renewal works on. Counted: history.RenewalPoolWait.
var poolKind = Kind{Name: ClientPool, Needs: Needs{Clients: true, CrashesClients: true},
	Description: "exhaust the connection pool of 8 clients' locks (two connections each): when one enters its critical section, blocking commands of the application's own take every connection for 1.5x the TTL, and its renewals wait for one past the lease's end while the holder works on (Redis and the network healthy)",
	New: func(e Env) (Fault, error) {
		return &talliedFault{clientFault: clientFault{env: e, what: func(_ *rand.Rand, e Env) (ClientFault, string) {
			return ClientFault{Kind: ClientPool, N: pooled, D: e.TTL * 3 / 2}, ""
		}}, kind: ClientPool}, nil
	}}
