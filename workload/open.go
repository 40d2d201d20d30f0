package workload

import (
	"context"
	"math"
	"time"

	"github.com/lockcheck/lockcheck/internal/ctxwait"
)

// runOpen is the open model (Config.Rate): acquire attempts arrive on a
// fixed schedule, one every 1/Rate, whatever the earlier ones are doing,
// and a pool of Clients workers starts each as soon as one is free. An
// attempt keeps the time it was due (history.Op.Scheduled), so its latency
// counts the wait for a free worker: a stalled server shows in every
// attempt that waited, not only in the few that ran (coordinated omission,
// corrected as wrk2 and k6's constant-arrival-rate do). Attempts due more
// than a second's worth behind (the backlog full) are dropped and counted.
func (r *Runner) runOpen(ctx context.Context) {
	backlog := max(r.cfg.Clients, int(math.Ceil(r.cfg.Rate)))
	jobs := make(chan int64, backlog)
	wg := r.eachClient(func(id int) { r.worker(ctx, id, jobs) })
	interval := float64(time.Second) / r.cfg.Rate
	start := r.now()
	for i := int64(1); r.cfg.Ops == 0 || i <= r.cfg.Ops; i++ {
		due := start + int64(float64(i)*interval)
		// Behind schedule, the attempts already due go out at once.
		if now := r.now(); due > now && !ctxwait.Sleep(ctx, time.Duration(due-now)) {
			break
		}
		if ctx.Err() != nil {
			break
		}
		r.counters.scheduled.Add(1)
		select {
		case jobs <- due:
		default:
			r.counters.dropped.Add(1)
		}
	}
	close(jobs)
	wg.Wait()
}

// worker runs the attempts it takes off jobs: one acquire each (a retry
// would be an arrival of its own), then, if acquired, the hold and the
// release as in the closed model. When the run stops, attempts still
// queued are not started (scheduled minus started says how many).
func (r *Runner) worker(ctx context.Context, id int, jobs <-chan int64) {
	c := newClient(r.cfg, id)
	for due := range jobs {
		if ctx.Err() != nil {
			continue
		}
		r.counters.started.Add(1)
		key := KeyName(r.cfg.KeyPrefix, c.pickKey(r.cfg.Keys))
		if lease, res := r.attempt(ctx, c, key, due); res == held {
			r.holdAndRelease(ctx, c, lease)
		}
	}
}
