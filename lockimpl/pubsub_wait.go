package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// releasePublishScript is the compare-and-delete release that, when it
// deleted the key, publishes on the key's unlock channel (ARGV[2]), in
// the same script: no waiter subscribed before the delete can miss it.
var releasePublishScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
redis.call("del", KEYS[1])
redis.call("publish", ARGV[2], ARGV[1])
return 1
else return 0 end`)

// UnlockChannel is the channel pubsub-wait's release publishes a key's
// unlock on.
func UnlockChannel(key string) string { return "lockcheck-unlock:" + key }

// PubSubWait is a waiter woken by pub/sub, as Redisson's lock() and
// goRedisson's waiters are: a waiter subscribes to the key's unlock
// channel, then tries, then sleeps until an unlock message or its poll
// fallback (a key that expires publishes nothing), and tries again.
// Subscribed before its first try, it cannot miss an unlock that falls
// after that try.
type PubSubWait struct {
	*SetNX
	poll, bound time.Duration
	// late: subscribe only after the first try, with no poll to fall
	// back on (broken-wait-subscribe-after-try).
	late bool
}

// NewPubSubWait is the Factory of "pubsub-wait": a poll fallback of
// 250 ms inside a declared bound of 1 s.
func NewPubSubWait(env Env) (Locker, error) { return newPubSubWait(env, false) }

func newPubSubWait(env Env, late bool) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	return &PubSubWait{SetNX: s.(*SetNX), poll: DefaultWakeBound / 4, bound: DefaultWakeBound, late: late}, nil
}

// WakeBound implements Waiter.
func (p *PubSubWait) WakeBound() time.Duration { return p.bound }

// Release implements Locker: compare, delete and publish in one script.
func (p *PubSubWait) Release(ctx context.Context, l Lease) error {
	return runScript(ctx, p.c, releasePublishScript, "release", l.Key, l.Token, UnlockChannel(l.Key))
}

// subscribe subscribes to key's unlock channel and waits for Redis to
// confirm it (bounded by the op timeout): only then can no unlock after
// it be missed.
func (p *PubSubWait) subscribe(ctx context.Context, key string) (*redis.PubSub, error) {
	sub := p.c.Subscribe(ctx, UnlockChannel(key))
	rctx, cancel := context.WithTimeout(ctx, cmpOr(p.opTimeout, 3*time.Second))
	defer cancel()
	if _, err := sub.Receive(rctx); err != nil {
		_ = sub.Close()
		return nil, fmt.Errorf("subscribe %s: %w", key, err)
	}
	return sub, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// AcquireWait implements Waiter. A try that is not a definite refusal
// ends the wait, as setnx-block's does; a subscription that fails before
// the first try is not sent (nothing was tried).
func (p *PubSubWait) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	l := p.newLease(key, ttl)
	deadline := p.now() + int64(wait)
	var sub *redis.PubSub
	if !p.late {
		var err error
		if sub, err = p.subscribe(ctx, key); err != nil {
			return Lease{}, fmt.Errorf("acquire %s: %w: %v", key, ErrNotSent, err)
		}
	}
	defer func() {
		if sub != nil {
			_ = sub.Close()
		}
	}()
	for {
		l.Acquired = time.Duration(p.now())
		got, err := p.acquire(ctx, l)
		if !errors.Is(err, ErrNotAcquired) {
			return got, err
		}
		left := time.Duration(deadline - p.now())
		if left <= 0 {
			return Lease{}, err
		}
		if sub == nil {
			var serr error
			if sub, serr = p.subscribe(ctx, key); serr != nil {
				return Lease{}, fmt.Errorf("acquire %s: %w", key, serr) // refused so far; the wait cut short
			}
		}
		if !p.sleep(ctx, sub, left) {
			return Lease{}, err
		}
	}
}

// sleep waits for an unlock message, the poll fallback (none when late)
// or left, whichever comes first; false if ctx ended it.
func (p *PubSubWait) sleep(ctx context.Context, sub *redis.PubSub, left time.Duration) bool {
	if !p.late {
		left = min(left, p.poll)
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-sub.Channel():
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// pubsubWaitEntry registers "pubsub-wait".
var pubsubWaitEntry = Entry{Name: "pubsub-wait", Factory: NewPubSubWait, Subscribes: true,
	Description: "setnx whose acquire waits (--wait) woken by pub/sub: subscribes to the key's unlock channel, then tries, then sleeps until an unlock message (its release publishes one in the delete's script) or a 250 ms poll; declares a wake-up bound of 1 s"}

// brokenWaitSubscribeAfterTryEntry is "broken-wait-subscribe-after-try":
// the lost wake-up of Redisson's tracker (#5761, #6664): a waiter that
// subscribes only after its try found the key held misses an unlock that
// falls between the two, and with no poll to fall back on sleeps out its
// wait on a free key.
var brokenWaitSubscribeAfterTryEntry = Entry{Name: "broken-wait-subscribe-after-try", Broken: true, Subscribes: true,
	Factory:     func(env Env) (Locker, error) { return newPubSubWait(env, true) },
	Description: "pubsub-wait that subscribes after its try found the key held, with no poll: an unlock between the two is missed, and the waiter sleeps out its wait on a free key"}
