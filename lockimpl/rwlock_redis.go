package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

// The read-write lock's scripts: as the semaphore's, its key is a sorted
// set of the leases held, each scored by its expiry in ms on Redis's
// clock (TIME, read inside the script), the expired pruned before any
// decision. A reader's member is its token; a writer's is rwWriter and
// its token, so that a look at the members tells a writer from readers.
const (
	rwWriter = "w:"
	// rwPrune drops the expired leases; what follows decides on the rest.
	rwPrune = semaphoreNow + `redis.call("zremrangebyscore", KEYS[1], "-inf", now)
`
	// rwAnyWriter returns 0 if a writer holds the key.
	rwAnyWriter = `for _, m in ipairs(redis.call("zrange", KEYS[1], 0, -1)) do
  if string.sub(m, 1, 2) == "` + rwWriter + `" then return 0 end
end
`
	// rwAnyLease returns 0 if anyone holds the key.
	rwAnyLease = `if redis.call("zcard", KEYS[1]) > 0 then return 0 end
`
	// rwAdd adds ARGV[1] (the member) with ARGV[2] (ttl ms) and grants.
	rwAdd = `redis.call("zadd", KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
` + semaphoreKeep + `return 1`
	// rwMember finds the lease of token ARGV[1] in either mode: m its
	// member, s its score (nil: none).
	rwMember = semaphoreNow + `local m = ARGV[1]
local s = redis.call("zscore", KEYS[1], m)
if not s then
  m = "` + rwWriter + `" .. ARGV[1]
  s = redis.call("zscore", KEYS[1], m)
end
`
	// rwReadSource: ARGV member, ttl ms. Granted unless a writer holds.
	rwReadSource = rwPrune + rwAnyWriter + rwAdd
	// rwWriteSource: ARGV member, ttl ms. Granted only if no one holds.
	rwWriteSource = rwPrune + rwAnyLease + rwAdd
	// rwReleaseSource: ARGV token. An expired lease is not held: it is
	// dropped, and the release fails.
	rwReleaseSource = rwMember + `if not s then return 0 end
redis.call("zrem", KEYS[1], m)
if tonumber(s) > now then return 1 end
return 0`
	// rwExtendSource: ARGV token, ttl ms; rescores only a lease still
	// held, in its mode.
	rwExtendSource = rwMember + `if not s or tonumber(s) <= now then return 0 end
redis.call("zadd", KEYS[1], "xx", now + tonumber(ARGV[2]), m)
` + semaphoreKeep + `return 1`
)

var (
	rwRead    = redis.NewScript(rwReadSource)
	rwWrite   = redis.NewScript(rwWriteSource)
	rwRelease = redis.NewScript(rwReleaseSource)
	rwExtend  = redis.NewScript(rwExtendSource)
)

// RWLock is the correct read-write lock on one Redis, without writer
// preference: each acquire, release and extend one script over the key's
// sorted set of leases (rwReadSource, rwWriteSource), timed by Redis's
// clock. A write is granted while no lease is held, a read while no
// writer holds. Its broken variants (broken_rwlock.go) swap one script.
type RWLock struct {
	c            redis.UniversalClient
	now          func() int64
	read, write  *redis.Script
	release, ext *redis.Script
}

// NewRWLock is the Factory of "rwlock".
func NewRWLock(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	return &RWLock{c: c, now: ClockOf(env), read: rwRead, write: rwWrite, release: rwRelease, ext: rwExtend}, nil
}

// WritersPreferred implements ReadWriter: a reader waits only for a
// writer that holds the key.
func (r *RWLock) WritersPreferred() bool { return false }

// Acquire implements Locker: in the mode ctx names (AccessOf).
func (r *RWLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return r.AcquireIn(ctx, key, ttl, AccessOf(ctx))
}

// AcquireIn implements ReadWriter.
func (r *RWLock) AcquireIn(ctx context.Context, key string, ttl time.Duration, access string) (Lease, error) {
	if err := CheckAccess(access); err != nil {
		return Lease{}, err
	}
	l := Lease{Key: key, Token: NewToken(), Acquired: time.Duration(r.now()), TTL: ttl}
	sc, member := r.read, l.Token
	if access == history.AccessWrite {
		sc, member = r.write, rwWriter+l.Token
	}
	if err := runScript(ctx, r.c, sc, "acquire", key, member, ttl.Milliseconds()); err != nil {
		return Lease{}, notHeldIsTaken(err)
	}
	return l, nil
}

// Release implements Locker.
func (r *RWLock) Release(ctx context.Context, l Lease) error {
	return runScript(ctx, r.c, r.release, "release", l.Key, l.Token)
}

// Extend implements Locker.
func (r *RWLock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(r.now())
	if err := runScript(ctx, r.c, r.ext, "extend", l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close implements Closer.
func (r *RWLock) Close() error { return r.c.Close() }

// rwlockEntry registers "rwlock".
var rwlockEntry = Entry{Name: "rwlock", Factory: NewRWLock, Shape: ShapeRWLock,
	Description: "read-write lock (--readers F), no writer preference: a sorted set of leases scored by expiry on Redis's TIME, one Lua script each (prune expired; a write granted while no lease is held, a read while no writer holds; release and extend only a lease still held)"}
