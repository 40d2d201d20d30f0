package workload

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// clientLag is how far behind the true time the clock of the client
// calling with ctx is now (lockimpl.Env.ClientLag): what client-clock
// made it (skewClients), 0 for a client it did not skew.
func (r *Runner) clientLag(ctx context.Context) time.Duration {
	f := r.faults
	id := lockimpl.ClientFrom(ctx)
	if id < 0 || !f.faulty.Load() {
		return 0
	}
	f.cutMu.Lock()
	c, ok := f.clocks[f.slot(id)]
	f.cutMu.Unlock()
	if !ok {
		return 0
	}
	return time.Duration(c.behind(r.now()))
}
