package lockimpl

// brokenWatchdogNoLossCheckEntry is "broken-watchdog-no-loss-check".
var brokenWatchdogNoLossCheckEntry = Entry{Name: "broken-watchdog-no-loss-check", Broken: true, Watchdog: true, Factory: newTrustWatchdog,
	Description: "watchdog whose holder never checks its lease's end: it works on until a renewal fails (Redisson's isHeldByCurrentThread is local state), so a renewal starved inside the client past the TTL leaves it in its section after the key expired and another took it (Redisson #2665, #5698)"}

// newTrustWatchdog is "watchdog" whose holder trusts its renewal.
func newTrustWatchdog(env Env) (Locker, error) {
	l, err := newSetNXWatchdog(env)
	if err != nil {
		return nil, err
	}
	l.(*Watchdog).trust = true
	return l, nil
}
