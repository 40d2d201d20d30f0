package cluster

import (
	"context"
	"time"
)

// poll calls try every interval until it returns nil, ctx ends, or the
// deadline passes; then it returns try's last error: how lockcheck waits
// for a topology to be ready (replicas in sync, sentinels that know each
// other, a cluster that agrees).
func poll(ctx context.Context, deadline time.Time, every time.Duration, try func() error) error {
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
