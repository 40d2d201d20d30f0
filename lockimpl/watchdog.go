package lockimpl

import (
	"context"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Watchdog is SetNX plus a goroutine per lease that extends it every TTL/3
// until it is released. When an extension fails or cannot be confirmed, the
// lease is marked lost (Watch.Lost) and the watchdog stops: the holder must
// leave its critical section.
type Watchdog struct {
	*SetNX
	record func(history.Op)

	mu    sync.Mutex
	dogs  map[string]*dog // by token
	wg    sync.WaitGroup
	close sync.Once
}

type dog struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewWatchdog is the Factory of "watchdog".
func NewWatchdog(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	rec := env.Record
	if rec == nil {
		rec = func(history.Op) {}
	}
	return &Watchdog{SetNX: s.(*SetNX), record: rec, dogs: map[string]*dog{}}, nil
}

// Acquire implements Locker; a successful lease comes with a Watch.
func (w *Watchdog) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l, err := w.SetNX.Acquire(ctx, key, ttl)
	if err != nil {
		return l, err
	}
	l.Watch = newWatch(l.Acquired + ttl)
	// The dog outlives the Acquire call, so it gets its own context; it
	// keeps the client id so its extends are recorded under the holder.
	dctx, cancel := context.WithCancel(WithGate(WithClient(context.Background(), ClientFrom(ctx)), GateFrom(ctx)))
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
	return l, nil
}

func (w *Watchdog) keepAlive(ctx context.Context, l Lease) {
	t := time.NewTicker(l.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A paused client's watchdog is paused with it.
		GateFrom(ctx).Wait(ctx)
		if ctx.Err() != nil {
			return
		}
		// Each extension must finish before the lease could expire.
		opCtx, cancel := context.WithTimeout(ctx, l.TTL/3)
		call := w.now()
		_, err := w.SetNX.Extend(opCtx, l, l.TTL)
		ret := w.now()
		cancel()
		if ctx.Err() != nil && err != nil {
			// Released while the extend was in flight: its outcome is
			// unknown, so it is recorded as such, and the dog stops.
			err = ctx.Err()
		}
		op := history.Op{Process: ClientFrom(ctx), F: history.Extend, Type: Outcome(err), Key: l.Key,
			Token: l.Token, TTLms: l.TTL.Milliseconds(), Call: call, Return: ret}
		if err != nil {
			op.Error = err.Error()
		}
		w.record(op)
		if err != nil {
			l.Watch.markLost()
			return
		}
		l.Watch.deadline.Store(call + int64(l.TTL))
	}
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
	return w.SetNX.Release(ctx, l)
}

// Close stops every watchdog and closes the client.
func (w *Watchdog) Close() error {
	w.close.Do(func() {
		w.mu.Lock()
		for _, d := range w.dogs {
			d.cancel()
		}
		w.mu.Unlock()
		w.wg.Wait()
	})
	return w.SetNX.Close()
}
