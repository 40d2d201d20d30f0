// Package ctxwait waits for a duration or a context, whichever ends first.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done; it reports whether it waited d.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
