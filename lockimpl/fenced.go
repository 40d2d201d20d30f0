package lockimpl

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// fencedAcquire takes the lock and issues its fencing token in one atomic
// script: the per-key counter only moves for a successful acquisition.
var fencedAcquire = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("incr", KEYS[2])
end
return 0`)

// Fenced is SetNX whose leases carry a fencing token, issued atomically
// with the lock. A resource that rejects tokens lower than the highest it
// accepted turns a stale holder's write into a rejected one.
type Fenced struct{ *SetNX }

// NewFenced is the Factory of "fenced".
func NewFenced(env Env) (Locker, error) {
	s, err := NewSetNX(env)
	if err != nil {
		return nil, err
	}
	return &Fenced{s.(*SetNX)}, nil
}

// FenceKey is the counter key of a lock key, in the lock key's cluster
// slot: the lock key is its hash tag, unless it has one of its own.
func FenceKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 && strings.IndexByte(key[i+1:], '}') > 0 {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// Acquire implements Locker.
func (f *Fenced) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := f.newLease(key, ttl)
	fence, err := fencedAcquire.Run(ctx, f.c, []string{key, FenceKey(key)}, l.Token, ttl.Milliseconds()).Int64()
	if err != nil {
		return Lease{}, firstErr("acquire", key, err)
	}
	if fence == 0 {
		return Lease{}, ErrNotAcquired
	}
	l.Fence = fence
	return l, nil
}

// fencedEntry registers "fenced".
var fencedEntry = Entry{Name: "fenced", Factory: NewFenced,
	Description: "setnx whose acquire also INCRs a per-key fencing counter, in one Lua script; the resource rejects stale tokens"}
