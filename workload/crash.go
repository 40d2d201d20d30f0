package workload

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/redis/go-redis/v9"
)

// ErrCrashed is what a crashed client's command returns: it was never sent.
// Client-side faults live here, in the part that plays the clients; a lock
// meets them only through lockimpl.Env's Hooks and Wait.
var ErrCrashed = errors.New("client crashed")

// crashHook is a go-redis hook that fails, before sending it, every
// command of a client that faults.crashed reports dead, and tells
// faults.succeeded
// about each command that succeeded (SET OK, SETNX 1, a script or counter
// returning a positive integer): the moments after which a client may hold
// a lock. The client comes from the command's context
// (lockimpl.WithClient); background work of a client, such as its
// watchdog, carries the same id and dies with it.
type crashHook struct{ f *faults }

func (h crashHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h crashHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		id := lockimpl.ClientFrom(ctx)
		if h.f.crashed(id) {
			cmd.SetErr(ErrCrashed)
			return ErrCrashed
		}
		if healed := h.f.cutOff(id); healed != nil {
			if err := h.f.waitCut(ctx, healed); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		err := next(ctx, cmd)
		if err == nil && success(cmd) {
			h.f.succeeded(id)
		}
		return err
	}
}

// success reports whether a command's reply is one a lock reads as "done".
func success(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.StatusCmd:
		return c.Val() == "OK"
	case *redis.BoolCmd:
		return c.Val()
	case *redis.IntCmd:
		return c.Val() > 0
	case *redis.Cmd:
		n, err := c.Int64()
		return err == nil && n > 0
	}
	return false
}

func (h crashHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		id := lockimpl.ClientFrom(ctx)
		err := ErrCrashed
		if !h.f.crashed(id) {
			err = nil
			if healed := h.f.cutOff(id); healed != nil {
				err = h.f.waitCut(ctx, healed)
			}
		}
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		err = next(ctx, cmds)
		// A pipeline that succeeded is such a moment too (setnx-wait-all
		// sends every command with its WAIT in one).
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Err() == nil && success(c) }) {
			h.f.succeeded(id)
		}
		return err
	}
}

// gate stops a client's background work while the client is paused (a
// stop-the-world pause stops its watchdog too). The zero value is open.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // non-nil while paused; closed on resume
}

// pause closes the gate.
func (g *gate) pause() {
	g.mu.Lock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	g.mu.Unlock()
}

// resume opens the gate.
func (g *gate) resume() {
	g.mu.Lock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
	g.mu.Unlock()
}

// wait returns when the gate is open or ctx is done.
func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

type gateKey struct{}

// waitGate is lockimpl.Env.Wait: it blocks while the gate of the client in
// ctx is closed (a context from a client's opCtx, or derived from one).
func waitGate(ctx context.Context) {
	if g, ok := ctx.Value(gateKey{}).(*gate); ok {
		g.wait(ctx)
	}
}
