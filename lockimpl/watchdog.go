package lockimpl

import (
	"context"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Watchdog wraps a Locker with a goroutine per lease that extends it at a
// fixed interval until it is released: the client-side watchdog of
// Redisson and of most hand-written locks. When an extension fails or
// cannot be confirmed, the lease is marked lost (Watch.Lost) and the
// watchdog stops: the holder must leave its critical section.
//
// The "watchdog" lock is SetNX under a Watchdog every TTL/3; --extend-every
// puts any lock under one, so that its extend is tested too.
type Watchdog struct {
	inner Locker
	// every is the interval (0: TTL/3 of each lease).
	every time.Duration
	add   bool // inner's extend adds to what remains (AddExtender)
	// swallow: a failed extension is ignored and the lease kept alive
	// locally, as if it had succeeded (broken-watchdog-swallow).
	swallow bool
	// leak: an acquire whose outcome the caller never learnt arms a
	// renewal all the same, which nothing cancels and the caller never
	// sees (broken-watchdog-leak).
	leak bool
	// trust: the holder is given no lease end to check (its lease's
	// deadline is the renewal's to keep), only the renewal's failure
	// (broken-watchdog-no-loss-check).
	trust bool
	// untimed: a renewal has no deadline of its own, and waits as long
	// as the client lets it (its pool and read timeouts)
	// (broken-watchdog-pool-wait).
	untimed bool

	now    func() int64
	record func(history.Op)
	wait   func(context.Context) // Env.Wait

	mu    sync.Mutex
	dogs  map[string]*dog // by token
	wg    sync.WaitGroup
	close sync.Once
}

type dog struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// AddExtender is implemented by Lockers whose Extend adds its TTL to the
// time the lease had left instead of replacing it; their extends are
// recorded with mode "add" so that the checker's model follows them.
type AddExtender interface {
	ExtendAdds() bool
}

// ExtendAdds reports whether l's extends are additive.
func ExtendAdds(l Locker) bool {
	a, ok := l.(AddExtender)
	return ok && a.ExtendAdds()
}

// KeyTTLer is implemented by a lock that sets in Redis a TTL other than
// the one it is asked for (go-zero adds 500 ms): the history records
// what Redis was told, so that the lease model expires the key when
// Redis does.
type KeyTTLer interface {
	KeyTTL(ttl time.Duration) time.Duration
}

// TTLRule is a KeyTTLer's rule where it has one: the TTL rounded up to
// a multiple of Round (0: not rounded), then Add added.
type TTLRule struct{ Round, Add time.Duration }

// KeyTTL applies the rule.
func (r TTLRule) KeyTTL(ttl time.Duration) time.Duration {
	if r.Round > 0 {
		ttl = (ttl + r.Round - 1) / r.Round * r.Round
	}
	return ttl + r.Add
}

// TTLRuler is a KeyTTLer whose KeyTTL is a TTLRule, which a lock process
// can state in its ping's reply (process.Serve).
type TTLRuler interface {
	TTLRule() TTLRule
}

// KeyTTL is the TTL l sets in Redis for a lease asked for ttl.
func KeyTTL(l Locker, ttl time.Duration) time.Duration {
	if k, ok := l.(KeyTTLer); ok {
		return k.KeyTTL(ttl)
	}
	return ttl
}

// NewWatchdog wraps inner: every lease it grants is extended by its TTL
// every interval (0: a third of the TTL) until released. Extensions are
// recorded through env.Record under the holder's process.
func NewWatchdog(inner Locker, every time.Duration, env Env) *Watchdog {
	rec := env.Record
	if rec == nil {
		rec = func(history.Op) {}
	}
	return &Watchdog{inner: inner, every: every, add: ExtendAdds(inner), now: ClockOf(env), record: rec, wait: env.Wait, dogs: map[string]*dog{}}
}

// newSetNXWatchdog is the Factory of "watchdog".
func newSetNXWatchdog(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	return NewWatchdog(s, 0, env), nil
}

// ExtendAdds implements AddExtender.
func (w *Watchdog) ExtendAdds() bool { return w.add }

// Acquire implements Locker; a successful lease comes with a Watch.
func (w *Watchdog) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	call := time.Duration(w.now())
	l, err := w.inner.Acquire(ctx, key, ttl)
	if err != nil {
		if w.leak && Outcome(err) == history.Info && l.Token != "" {
			w.arm(ctx, l)
		}
		return l, err
	}
	// A lock that does not say when its lease began (a lock process, a
	// user's Go lock) gets our call: the watched deadline must not start
	// at the clock's zero.
	if l.Acquired == 0 || call < l.Acquired {
		l.Acquired = call
	}
	l.Watch = newWatch(l.Deadline())
	if w.trust {
		l.Watch = NewScope()
	}
	w.arm(ctx, l)
	return l, nil
}

// arm starts l's dog. It outlives the Acquire call, so it gets its own
// context; it keeps the client's values (its id, under which its extends
// are recorded, and what Env.Wait reads) but not its cancellation. A
// lease without a Watch (the leak of broken-watchdog-leak) is renewed
// unseen: its extends are not recorded, as a library's own renewals
// never reach its caller.
func (w *Watchdog) arm(ctx context.Context, l Lease) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &dog{cancel: cancel, done: make(chan struct{})}
	w.mu.Lock()
	w.dogs[l.Token] = d
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(d.done)
		w.keepAlive(dctx, l)
	}()
}

func (w *Watchdog) keepAlive(ctx context.Context, l Lease) {
	every := w.every
	if every <= 0 {
		every = l.TTL / 3
	}
	t := time.NewTicker(every)
	defer t.Stop()
	cur := l
	cur.Watch = nil
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A paused client's watchdog is paused with it.
		if w.wait != nil {
			w.wait(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		next, op, err := w.extend(ctx, l, cur, min(every, l.TTL/3))
		call := op.Call
		if l.Watch == nil {
			// An unseen renewal, armed once the acquire's reply came
			// (Redisson's callback): until the key is ours it renews
			// nothing, then it renews it until the client closes.
			if err == nil {
				cur = next
			}
			continue
		}
		Record(w.record, op, err)
		if err != nil && !w.swallow {
			l.Watch.markLost(err)
			return
		}
		// The deadline we honour never runs past what the extend could
		// have given: from our call, not from when Redis applied it.
		next.Watch = nil
		if !w.add {
			next.Acquired, next.TTL = time.Duration(call), l.TTL
		}
		cur = next
		if !w.trust {
			l.Watch.deadline.Store(int64(cur.Deadline()))
		}
	}
}

// extend extends cur, l's lease as last extended, within timeout (each
// extension must finish before the lease could expire), and returns the
// op that records it.
func (w *Watchdog) extend(ctx context.Context, l, cur Lease, timeout time.Duration) (Lease, history.Op, error) {
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	if w.untimed {
		opCtx, cancel = ctx, func() {}
	}
	call := w.now()
	next, err := w.inner.Extend(opCtx, cur, l.TTL)
	ret := w.now()
	cancel()
	if ctx.Err() != nil && err != nil {
		// Released while the extend was in flight: its outcome is
		// unknown, so it is recorded as such, and the dog stops.
		err = ctx.Err()
	}
	op := history.Op{Process: ClientFrom(ctx), F: history.Extend, Key: l.Key,
		Token: l.Token, TTLms: KeyTTL(w.inner, l.TTL).Milliseconds(), Call: call, Return: ret}
	if w.add {
		op.Mode = history.ExtendAdd
	}
	return next, op, err
}

// stopDog stops the lease's watchdog and waits for it.
func (w *Watchdog) stopDog(token string) {
	w.mu.Lock()
	d := w.dogs[token]
	delete(w.dogs, token)
	w.mu.Unlock()
	if d != nil {
		d.cancel()
		<-d.done
	}
}

// Release stops the watchdog, then releases.
func (w *Watchdog) Release(ctx context.Context, l Lease) error {
	w.stopDog(l.Token)
	return w.inner.Release(ctx, l)
}

// Scope implements Scoped: the inner lock's.
func (w *Watchdog) Scope() string { return ScopeOf(w.inner) }

// OwnTimeout implements OwnTimeouter: the inner lock's.
func (w *Watchdog) OwnTimeout() time.Duration { return OwnTimeoutOf(w.inner) }

// KeyTTL implements KeyTTLer: the inner lock's.
func (w *Watchdog) KeyTTL(ttl time.Duration) time.Duration { return KeyTTL(w.inner, ttl) }

// Extend implements Locker by the inner lock's extend.
func (w *Watchdog) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return w.inner.Extend(ctx, l, ttl)
}

// Close stops every watchdog and closes the inner lock.
func (w *Watchdog) Close() error {
	w.close.Do(func() {
		w.mu.Lock()
		for _, d := range w.dogs {
			d.cancel()
		}
		w.mu.Unlock()
		w.wg.Wait()
	})
	if c, ok := w.inner.(Closer); ok {
		return c.Close()
	}
	return nil
}

// watchdogEntry registers "watchdog".
var watchdogEntry = Entry{Name: "watchdog", Factory: newSetNXWatchdog, Watchdog: true,
	Description: "setnx plus a background extend every TTL/3 until release; a failed extend marks the lease lost"}
