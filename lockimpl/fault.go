package lockimpl

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrCrashed is what a crashed client's command returns: it was never sent.
var ErrCrashed = errors.New("client crashed")

// CrashHook returns a go-redis hook that fails, before sending it, every
// command of a client for which crashed reports true, and tells succeeded
// about each command that succeeded (SET OK, SETNX 1, a script or counter
// returning a positive integer): the moments after which a client may hold
// a lock. The client comes from the command's context (WithClient);
// background work of a client, such as its watchdog, carries the same id
// and dies with it.
func CrashHook(crashed func(client int) bool, succeeded func(client int)) redis.Hook {
	return crashHook{crashed, succeeded}
}

type crashHook struct {
	crashed   func(int) bool
	succeeded func(int)
}

func (h crashHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h crashHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		id := ClientFrom(ctx)
		if h.crashed(id) {
			cmd.SetErr(ErrCrashed)
			return ErrCrashed
		}
		err := next(ctx, cmd)
		if err == nil && success(cmd) {
			h.succeeded(id)
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
		if h.crashed(ClientFrom(ctx)) {
			for _, c := range cmds {
				c.SetErr(ErrCrashed)
			}
			return ErrCrashed
		}
		return next(ctx, cmds)
	}
}

// Gate stops a client's background work while the client is paused (a
// stop-the-world pause stops its watchdog too). The zero value is open.
type Gate struct {
	mu sync.Mutex
	ch chan struct{} // non-nil while paused; closed on resume
}

// Pause closes the gate.
func (g *Gate) Pause() {
	g.mu.Lock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	g.mu.Unlock()
}

// Resume opens the gate.
func (g *Gate) Resume() {
	g.mu.Lock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
	g.mu.Unlock()
}

// Wait returns when the gate is open or ctx is done.
func (g *Gate) Wait(ctx context.Context) {
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

// WithGate attaches a client's gate to ctx.
func WithGate(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// GateFrom returns ctx's gate, or an open one.
func GateFrom(ctx context.Context) *Gate {
	if g, ok := ctx.Value(gateKey{}).(*Gate); ok {
		return g
	}
	return &Gate{}
}
