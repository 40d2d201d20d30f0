package lockimpl

// brokenWatchdogSwallowEntry is "broken-watchdog-swallow".
var brokenWatchdogSwallowEntry = Entry{Name: "broken-watchdog-swallow", Broken: true, Watchdog: true, Factory: newSwallowWatchdog,
	Description: "watchdog that swallows a failed extend (a timeout, a lost connection) and keeps the lease alive locally, as if it had succeeded: a client cut off from Redis works on after its lease expired"}

// newSwallowWatchdog is "watchdog" whose extends never fail.
func newSwallowWatchdog(env Env) (Locker, error) {
	l, err := newSetNXWatchdog(env)
	if err != nil {
		return nil, err
	}
	l.(*Watchdog).swallow = true
	return l, nil
}
