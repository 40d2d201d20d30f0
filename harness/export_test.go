package harness

import "time"

// SetLimits makes the drain, the close and the grace of a phase past its
// deadline short, for a test, until the func it returns is called.
func SetLimits(drain, close, grace time.Duration) (restore func()) {
	old := limits
	limits.drain, limits.close, limits.grace = drain, close, grace
	return func() { limits = old }
}
