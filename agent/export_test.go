package agent

import "time"

// SetDrainLimit makes the coordinator's drain short, for a test, until
// the func it returns is called.
func SetDrainLimit(d time.Duration) (restore func()) {
	old := drainLimit
	drainLimit = d
	return func() { drainLimit = old }
}
