package lockimpl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scripts shared by the locks that check ownership atomically.
var (
	// releaseScript deletes the key only if it still holds our token.
	releaseScript = redis.NewScript(ReleaseScriptSource)
	// extendScript resets the TTL only if the key still holds our token.
	extendScript = redis.NewScript(extendScriptSource)
)

// extendScriptSource is the compare-and-PEXPIRE script.
const extendScriptSource = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`

// ReleaseScriptSource is the compare-and-delete script (also the
// baselines').
const ReleaseScriptSource = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// firstErr wraps the error of an op's first command: one that never left
// (a refused dial, no pooled connection) is ErrNotSent.
func firstErr(what, key string, err error) error {
	if refused(err) {
		return fmt.Errorf("%s %s: %w: %v", what, key, ErrNotSent, err)
	}
	return fmt.Errorf("%s %s: %w", what, key, err)
}

// refused reports whether a command never left: its dial failed, or no
// pooled connection came free. It did not happen.
func refused(err error) bool {
	var oe *net.OpError
	return (errors.As(err, &oe) && oe.Op == "dial") || errors.Is(err, redis.ErrPoolTimeout)
}

// NewToken returns a 128-bit random token in hex.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// SetNX is the correct single-instance lock: SET key token NX PX ttl, with
// Lua compare-and-delete release and compare-and-PEXPIRE extend, each by
// EVALSHA with an EVAL fallback on NOSCRIPT.
type SetNX struct {
	c   redis.UniversalClient
	now func() int64
	// opTimeout is the read deadline of every command (0: go-redis's 3s).
	opTimeout time.Duration
}

// NewSetNX is the Factory of "setnx".
func NewSetNX(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	return &SetNX{c: c, now: ClockOf(env), opTimeout: env.OpTimeout}, nil
}

// ClockOf is the history clock of env (its Now, or the wall clock).
func ClockOf(env Env) func() int64 {
	if env.Now != nil {
		return env.Now
	}
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// newLease is the lease an acquisition attempt asks for: a fresh token,
// timed from now.
func (s *SetNX) newLease(key string, ttl time.Duration) Lease {
	return Lease{Key: key, Token: NewToken(), Acquired: time.Duration(s.now()), TTL: ttl}
}

// Acquire implements Locker.
func (s *SetNX) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return s.acquire(ctx, s.newLease(key, ttl))
}

// acquire takes the lock for a prepared lease: SET key token NX PX ttl.
func (s *SetNX) acquire(ctx context.Context, l Lease) (Lease, error) {
	return l, setErr(l.Key, s.c.SetArgs(ctx, l.Key, l.Token, redis.SetArgs{Mode: "NX", TTL: l.TTL}).Err())
}

// setErr reads the error of a SET NX: nil reply is ErrNotAcquired.
func setErr(key string, err error) error {
	if errors.Is(err, redis.Nil) {
		return ErrNotAcquired
	}
	if err != nil {
		return firstErr("acquire", key, err)
	}
	return nil
}

// Release implements Locker.
func (s *SetNX) Release(ctx context.Context, l Lease) error {
	return runScript(ctx, s.c, releaseScript, "release", l.Key, l.Token)
}

// Extend implements Locker.
func (s *SetNX) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(s.now())
	if err := runScript(ctx, s.c, extendScript, "extend", l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close implements Closer.
func (s *SetNX) Close() error { return s.c.Close() }

// runScript runs a compare-and-X script whose reply is 1 on success and 0
// when the key does not hold the token.
func runScript(ctx context.Context, c redis.UniversalClient, sc *redis.Script, what, key string, args ...any) error {
	n, err := sc.Run(ctx, c, []string{key}, args...).Int64()
	if err != nil {
		return firstErr(what, key, err)
	}
	if n != 1 {
		return ErrNotHeld
	}
	return nil
}

// setnxEntry registers "setnx".
var setnxEntry = Entry{Name: "setnx", Factory: NewSetNX,
	Description: "SET key token NX PX ttl; Lua compare-and-delete release, compare-and-PEXPIRE extend"}
