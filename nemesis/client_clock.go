package nemesis

import (
	"math/rand/v2"
	"time"
)

// clientClockKind is the "client-clock" fault: it makes chosen clients'
// own clocks go wrong, holders first: each start picks one of three ways,
// a clock that runs at half speed, one set back by a TTL, or one that
// runs at 1.5 times speed. A slow or set-back clock keeps its client
// working after its lease expired on Redis; a fast one makes it leave
// early.
var clientClockKind = ClientKind(Kind{Name: "client-clock",
	Description: "the clocks 3 clients (holders first) time their leases by run slow (x0.5), jump back a TTL, or run fast (x1.5) for the window: a client believes it holds a lease Redis has expired"},
	func(rng *rand.Rand, e Env) (ClientFault, string) {
		rate, jump, how := 0.5, time.Duration(0), "slow x0.5"
		switch rng.IntN(3) {
		case 1:
			rate, jump, how = 1, e.TTL, "back "+e.TTL.String()
		case 2:
			rate, how = 1.5, "fast x1.5"
		}
		return ClientFault{Kind: ClientSkew, Rate: rate, Jump: jump}, how
	})
