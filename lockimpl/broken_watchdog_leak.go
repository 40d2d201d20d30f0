package lockimpl

// brokenWatchdogLeakEntry is "broken-watchdog-leak": Redisson #7272
// (https://github.com/redisson/redisson/issues/7272). Redisson arms a
// lock's renewal from a callback on the acquire's reply, and cancels it
// from the unlock's: when the caller gave up on the acquire first (it was
// interrupted, or timed out) and the SET took effect after all, the
// renewal is armed after everything that could cancel it, and renews a
// lock no caller holds for as long as the client lives. Here an acquire
// that ends indeterminate arms its renewal all the same; renewals the
// caller never sees are not in the history (as Redisson's never reach
// its caller), so the key is held, on paper, by no one.
var brokenWatchdogLeakEntry = Entry{Name: "broken-watchdog-leak", Broken: true, Watchdog: true, Factory: newLeakyWatchdog,
	Description: "watchdog whose acquire, when it ends indeterminate (a timeout), still arms the renewal, which nothing cancels (Redisson #7272): a key set after the caller gave up stays locked for the life of the client"}

func newLeakyWatchdog(env Env) (Locker, error) {
	l, err := newSetNXWatchdog(env)
	if err != nil {
		return nil, err
	}
	l.(*Watchdog).leak = true
	return l, nil
}
