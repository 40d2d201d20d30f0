package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Permitter is implemented by a semaphore: a lock whose key lets
// Permits leases be held at once (Env.Permits, as the run asks). A
// workload of more than one permit runs only a lock that has it, and
// records the count on its acquires (history.Op.Permits).
type Permitter interface {
	Permits() int
}

// PermitsOf is the permits a key of l has: 1 (a mutex) unless l is a
// Permitter.
func PermitsOf(l Locker) int {
	if p, ok := l.(Permitter); ok {
		return p.Permits()
	}
	return 1
}

// The semaphore's scripts: its key is a sorted set of the tokens holding
// a permit, each scored by its expiry in ms on Redis's clock (TIME, read
// inside the script, so that every client's permits expire by one clock).
// A member whose score is not past TIME is held; one that is has expired
// and is dropped before any count.
const (
	semaphoreNow = `local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`
	// semaphoreKeep makes the key live as long as its last permit.
	semaphoreKeep = `local last = redis.call("zrange", KEYS[1], -1, -1, "withscores")
if last[2] then redis.call("pexpire", KEYS[1], math.max(1, tonumber(last[2]) - now)) end
`
	// semaphoreAcquireSource: ARGV token, permits, ttl ms.
	semaphoreAcquireSource = semaphoreNow + `redis.call("zremrangebyscore", KEYS[1], "-inf", now)
if redis.call("zcard", KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call("zadd", KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
` + semaphoreKeep + `return 1`
	// semaphoreReleaseSource: ARGV token. An expired member is not held:
	// it is dropped, and the release fails.
	semaphoreReleaseSource = semaphoreNow + `local s = redis.call("zscore", KEYS[1], ARGV[1])
redis.call("zrem", KEYS[1], ARGV[1])
if s and tonumber(s) > now then return 1 end
return 0`
	// semaphoreExtendSource: ARGV token, ttl ms; rescores only a member
	// still held.
	semaphoreExtendSource = semaphoreNow + `local s = redis.call("zscore", KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
redis.call("zadd", KEYS[1], "xx", now + tonumber(ARGV[2]), ARGV[1])
` + semaphoreKeep + `return 1`
)

var (
	semaphoreAcquire = redis.NewScript(semaphoreAcquireSource)
	semaphoreRelease = redis.NewScript(semaphoreReleaseSource)
	semaphoreExtend  = redis.NewScript(semaphoreExtendSource)
)

// Semaphore is the correct semaphore of k permits on one Redis: each
// acquire, release and extend one script over the key's sorted set of
// permits (semaphoreAcquireSource), timed by Redis's clock.
type Semaphore struct {
	c   redis.UniversalClient
	now func() int64
	k   int
}

// NewSemaphore is the Factory of "semaphore": Env.Permits permits a key
// (at least 1).
func NewSemaphore(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	return &Semaphore{c: c, now: ClockOf(env), k: max(env.Permits, 1)}, nil
}

// Permits implements Permitter.
func (s *Semaphore) Permits() int { return s.k }

func (s *Semaphore) newLease(key string, ttl time.Duration) Lease {
	return Lease{Key: key, Token: NewToken(), Acquired: time.Duration(s.now()), TTL: ttl}
}

// Acquire implements Locker.
func (s *Semaphore) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := s.newLease(key, ttl)
	if err := runScript(ctx, s.c, semaphoreAcquire, "acquire", key, l.Token, s.k, ttl.Milliseconds()); err != nil {
		return Lease{}, notHeldIsTaken(err)
	}
	return l, nil
}

// notHeldIsTaken reads runScript's 0 reply to an acquire: every permit
// is held.
func notHeldIsTaken(err error) error {
	if errors.Is(err, ErrNotHeld) {
		return ErrNotAcquired
	}
	return err
}

// Release implements Locker.
func (s *Semaphore) Release(ctx context.Context, l Lease) error {
	return runScript(ctx, s.c, semaphoreRelease, "release", l.Key, l.Token)
}

// Extend implements Locker.
func (s *Semaphore) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(s.now())
	if err := runScript(ctx, s.c, semaphoreExtend, "extend", l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close implements Closer.
func (s *Semaphore) Close() error { return s.c.Close() }

// semaphoreEntry registers "semaphore".
var semaphoreEntry = Entry{Name: "semaphore", Factory: NewSemaphore, Shape: ShapeSemaphore,
	Description: "semaphore of --permits K: a sorted set of tokens scored by expiry on Redis's TIME, one Lua script each (prune expired, count, add if under K; release and extend only a permit still held)"}
