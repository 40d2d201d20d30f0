package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// announcer tells the coordinator of each lock op before it is sent to
// Redis, on the wire at once behind every op recorded before it (flush):
// if this agent dies, the ops it had in flight are known and written as
// indeterminate (they may have taken effect) rather than missing. An op
// that cannot be announced is not sent.
type announcer struct {
	lockimpl.Locker
	run *agentRun
}

func (a *announcer) announce(ctx context.Context, f history.Func, key, token string, ttl time.Duration) error {
	a.run.send(Op{Begin: true, Op: history.Op{Process: lockimpl.ClientFrom(ctx), F: f, Type: history.Info, Key: key,
		Token: token, TTLms: ttl.Milliseconds(), Call: a.run.now()}})
	if err := a.run.flush(); err != nil {
		return fmt.Errorf("%w: %w: %w", lockimpl.ErrNotSent, ErrLost, err)
	}
	return nil
}

func (a *announcer) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	if err := a.announce(ctx, history.Acquire, key, "", ttl); err != nil {
		return lockimpl.Lease{}, err
	}
	return a.Locker.Acquire(ctx, key, ttl)
}

func (a *announcer) Release(ctx context.Context, l lockimpl.Lease) error {
	if err := a.announce(ctx, history.Release, l.Key, l.Token, 0); err != nil {
		return err
	}
	return a.Locker.Release(ctx, l)
}

func (a *announcer) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	if err := a.announce(ctx, history.Extend, l.Key, l.Token, ttl); err != nil {
		return lockimpl.Lease{}, err
	}
	return a.Locker.Extend(ctx, l, ttl)
}

// Close closes the lock.
func (a *announcer) Close() error {
	lockimpl.Close(a.Locker)
	return nil
}

// ExtendAdds passes the lock's extend mode through.
func (a *announcer) ExtendAdds() bool { return lockimpl.ExtendAdds(a.Locker) }
