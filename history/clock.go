package history

import "time"

// Clock is the one monotonic clock of a run: nanoseconds since the run
// started. time.Since uses Go's monotonic reading, so wall-clock jumps on the
// host do not move it.
type Clock struct{ start time.Time }

// NewClock starts a clock at zero now.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// Now returns nanoseconds since the clock started.
func (c *Clock) Now() int64 { return int64(time.Since(c.start)) }

// Start returns the wall-clock time at which the clock read zero.
func (c *Clock) Start() time.Time { return c.start }
