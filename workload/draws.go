package workload

import "time"

// Draw is one critical section's draws of a client: the key it asks for
// and the hold it wants.
type Draw struct {
	Key  int
	Hold time.Duration
}

// Draws is the first n draws of client slot's source under cfg (through
// WithDefaults), made as the client makes them (pickKey, then the hold),
// for a test that a plan which drops a client leaves every other
// client's schedule as it was.
func Draws(cfg Config, slot, n int) []Draw {
	c := newClient(cfg, slot)
	out := make([]Draw, n)
	for i := range out {
		out[i] = Draw{Key: c.pickKey(cfg.Keys), Hold: holdTime(cfg, c)}
	}
	return out
}
