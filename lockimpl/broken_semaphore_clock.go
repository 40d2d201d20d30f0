package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The client's clock in the scores: the same sorted set as Semaphore's,
// each permit scored by its expiry, but "now" is the client's clock
// (ARGV), not Redis's TIME. Permits then expire by whichever client
// looks: one whose clock runs behind scores its permit already expired
// in the others' eyes, and one whose clock runs ahead prunes the others'
// live permits; either way a k + 1st holder is let in.
const (
	// clockAcquireSource: ARGV token, permits, ttl ms, the client's now in ms.
	clockAcquireSource = `local now = tonumber(ARGV[4])
redis.call("zremrangebyscore", KEYS[1], "-inf", now)
if redis.call("zcard", KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call("zadd", KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
` + semaphoreKeep + `return 1`
	// clockReleaseSource: ARGV token, the client's now in ms.
	clockReleaseSource = `local now = tonumber(ARGV[2])
local s = redis.call("zscore", KEYS[1], ARGV[1])
redis.call("zrem", KEYS[1], ARGV[1])
if s and tonumber(s) > now then return 1 end
return 0`
	// clockExtendSource: ARGV token, ttl ms, the client's now in ms.
	clockExtendSource = `local now = tonumber(ARGV[3])
local s = redis.call("zscore", KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
redis.call("zadd", KEYS[1], "xx", now + tonumber(ARGV[2]), ARGV[1])
` + semaphoreKeep + `return 1`
)

var (
	clockAcquire = redis.NewScript(clockAcquireSource)
	clockRelease = redis.NewScript(clockReleaseSource)
	clockExtend  = redis.NewScript(clockExtendSource)
)

// clientClockScores is the mistake of broken-semaphore-client-clock:
// each script told the client's time (ClientTime) to score and prune by.
type clientClockScores struct {
	lag func(context.Context) time.Duration
}

// ClientTime is the calling client's own clock in ms since the epoch:
// the machine's, less what lag (Env.ClientLag; nil: none) says it is
// behind.
func ClientTime(ctx context.Context, lag func(context.Context) time.Duration) int64 {
	now := time.Now()
	if lag != nil {
		now = now.Add(-lag(ctx))
	}
	return now.UnixMilli()
}

func (m clientClockScores) acquire(ctx context.Context, s *Semaphore, l Lease) (bool, error) {
	err := runScript(ctx, s.c, clockAcquire, "acquire", l.Key, l.Token, s.k, l.TTL.Milliseconds(), ClientTime(ctx, m.lag))
	return true, notHeldIsTaken(err)
}

func (m clientClockScores) release(ctx context.Context, s *Semaphore, l Lease) (bool, error) {
	return true, runScript(ctx, s.c, clockRelease, "release", l.Key, l.Token, ClientTime(ctx, m.lag))
}

func (m clientClockScores) extend(ctx context.Context, s *Semaphore, l Lease, ttl time.Duration) (bool, error) {
	return true, runScript(ctx, s.c, clockExtend, "extend", l.Key, l.Token, ttl.Milliseconds(), ClientTime(ctx, m.lag))
}

// brokenSemaphoreClientClockEntry is "broken-semaphore-client-clock".
var brokenSemaphoreClientClockEntry = Entry{Name: "broken-semaphore-client-clock", Broken: true, Shape: ShapeSemaphore,
	Factory: func(env Env) (Locker, error) {
		s, err := NewSemaphore(env)
		if err != nil {
			return nil, err
		}
		return &brokenSem{Semaphore: s.(*Semaphore), m: clientClockScores{env.ClientLag}}, nil
	},
	Description: "semaphore whose permits expire by the client's clock: each script scores and prunes the sorted set by the caller's time (an ARGV), not Redis's TIME, so a client whose clock runs behind or ahead lets a k+1st holder in (client-clock)"}
