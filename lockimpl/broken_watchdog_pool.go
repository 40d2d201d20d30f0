package lockimpl

// brokenWatchdogPoolWaitEntry is "broken-watchdog-pool-wait".
var brokenWatchdogPoolWaitEntry = Entry{Name: "broken-watchdog-pool-wait", Broken: true, Watchdog: true, Factory: newPoolWaitWatchdog,
	Description: "broken-watchdog-no-loss-check whose renewal has no deadline of its own: it waits as long as the client lets it (go-redis's PoolTimeout, the op timeout, for a connection), so a renewal that waits for a connection the application's traffic holds leaves its holder in its section after the key expired and another took it"}

// newPoolWaitWatchdog is "watchdog" whose holder trusts a renewal that
// waits on the client.
func newPoolWaitWatchdog(env Env) (Locker, error) {
	l, err := newTrustWatchdog(env)
	if err != nil {
		return nil, err
	}
	l.(*Watchdog).untimed = true
	return l, nil
}
