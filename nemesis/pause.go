package nemesis

import "math/rand/v2"

// pauseClientKind is the "pause-client" fault.
var pauseClientKind = ClientKind(Kind{Name: "pause-client", Description: "a holder stops between its acquire and its write for 1.5x the TTL (a GC pause, watchdog included), then writes"},
	func(_ *rand.Rand, e Env) (ClientFault, string) {
		return ClientFault{Kind: ClientPause, D: e.TTL * 3 / 2}, ""
	})

// pauseHolderKind is the "pause-holder" fault.
var pauseHolderKind = ClientKind(Kind{Name: "pause-holder", Description: "a holder stops in the middle of its critical section for 1.5x the TTL (watchdog included); on waking it checks its lease before it touches the resource again, while its watchdog's overdue extend goes out"},
	func(_ *rand.Rand, e Env) (ClientFault, string) {
		return ClientFault{Kind: ClientPause, D: e.TTL * 3 / 2, InSection: true}, ""
	})
