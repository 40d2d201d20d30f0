package lockimpl

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reenterer is implemented by a reentrant lock: its token names the
// owner, and the owner of a lease may acquire it again while it holds
// it. Reenter returns the lease with its TTL set anew from the
// re-entry's call (the key's whole expiry, as a re-entry PEXPIREs it);
// each Reenter is one more hold, and each Release of the owner's lease
// takes one away, the key free at none. ErrNotAcquired: another owner
// holds the key. A workload that re-enters (--reenter) runs only a lock
// that has it.
type Reenterer interface {
	Reenter(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
}

// Reentrant's scripts, as Redisson's RLock and
// examples/specs/reentrant-hash.toml keep it: the key is a hash of owner
// to hold count.
const (
	// reentrantAcquireSource: ARGV owner, ttl ms. Granted on a free key
	// or to its owner, one more hold, the key's TTL set anew.
	reentrantAcquireSource = `if redis.call("exists", KEYS[1]) == 0 or redis.call("hexists", KEYS[1], ARGV[1]) == 1 then
  redis.call("hincrby", KEYS[1], ARGV[1], 1)
  redis.call("pexpire", KEYS[1], ARGV[2])
  return 1
end
return 0`
	// reentrantReleaseSource: ARGV owner. One hold fewer; the key gone at
	// none. Its TTL is left as the last entry set it.
	reentrantReleaseSource = `if redis.call("hexists", KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call("hincrby", KEYS[1], ARGV[1], -1) <= 0 then redis.call("del", KEYS[1]) end
return 1`
	// reentrantExtendSource: ARGV owner, ttl ms.
	reentrantExtendSource = `if redis.call("hexists", KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call("pexpire", KEYS[1], ARGV[2])
return 1`
)

var (
	reentrantAcquire = redis.NewScript(reentrantAcquireSource)
	reentrantRelease = redis.NewScript(reentrantReleaseSource)
	reentrantExtend  = redis.NewScript(reentrantExtendSource)
)

// Reentrant is the correct reentrant lock on one Redis: a hash of owner
// to hold count, one Lua script each (reentrantAcquireSource), PEXPIRE on
// every entry.
type Reentrant struct {
	c   redis.UniversalClient
	now func() int64
	// acquire grants a new owner, reenter its owner again, release
	// takes a hold away (a broken variant swaps one).
	acquire, reenter, release *redis.Script
}

// NewReentrant is the Factory of "reentrant".
func NewReentrant(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	return &Reentrant{c: c, now: ClockOf(env), acquire: reentrantAcquire, reenter: reentrantAcquire, release: reentrantRelease}, nil
}

// Acquire implements Locker: a new owner's first hold.
func (r *Reentrant) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return r.enter(ctx, r.acquire, Lease{Key: key, Token: NewToken()}, ttl)
}

// Reenter implements Reenterer: one more hold of l's owner.
func (r *Reentrant) Reenter(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return r.enter(ctx, r.reenter, l, ttl)
}

func (r *Reentrant) enter(ctx context.Context, sc *redis.Script, l Lease, ttl time.Duration) (Lease, error) {
	l.Acquired, l.TTL = time.Duration(r.now()), ttl
	if err := runScript(ctx, r.c, sc, "acquire", l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, notHeldIsTaken(err)
	}
	return l, nil
}

// Release implements Locker: one hold of l's owner fewer.
func (r *Reentrant) Release(ctx context.Context, l Lease) error {
	return runScript(ctx, r.c, r.release, "release", l.Key, l.Token)
}

// Extend implements Locker: the key's TTL set anew, its holds unchanged.
func (r *Reentrant) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(r.now())
	if err := runScript(ctx, r.c, reentrantExtend, "extend", l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// Close implements Closer.
func (r *Reentrant) Close() error { return r.c.Close() }

// reentrantEntry registers "reentrant".
var reentrantEntry = Entry{Name: "reentrant", Factory: NewReentrant, Shape: ShapeReentrant,
	Description: "reentrant lock (--reenter N): a hash of owner to hold count, one Lua script each (grant a free key or its owner one more hold, PEXPIRE on every entry; release a hold, DEL at none; extend only the owner's)"}

// The classic mistakes of a reentrant lock, each Reentrant with one
// script swapped.
const (
	// brokenReentrantReleaseSource deletes the key on any release of its
	// owner, whatever the count: an inner release frees the key under the
	// outer section.
	brokenReentrantReleaseSource = `if redis.call("hexists", KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call("del", KEYS[1])
return 1`
	// brokenReentrantReenterSource re-enters without asking whose the
	// key is (the caller trusts that it holds it, as a client that counts
	// its holds itself does): an owner whose lease ended while it was
	// stopped re-enters a key another owner holds.
	brokenReentrantReenterSource = `redis.call("hincrby", KEYS[1], ARGV[1], 1)
redis.call("pexpire", KEYS[1], ARGV[2])
return 1`
)

// brokenReentrantReleaseDeletesEntry is "broken-reentrant-release-deletes".
var brokenReentrantReleaseDeletesEntry = Entry{Name: "broken-reentrant-release-deletes", Broken: true, Shape: ShapeReentrant,
	Factory: func(env Env) (Locker, error) {
		l, err := NewReentrant(env)
		if err == nil {
			l.(*Reentrant).release = redis.NewScript(brokenReentrantReleaseSource)
		}
		return l, err
	},
	Description: "reentrant lock whose release DELs the key whatever the hold count: an inner release frees the key while the outer section runs on"}

// brokenReentrantNoOwnerCheckEntry is "broken-reentrant-no-owner-check".
var brokenReentrantNoOwnerCheckEntry = Entry{Name: "broken-reentrant-no-owner-check", Broken: true, Shape: ShapeReentrant,
	Factory: func(env Env) (Locker, error) {
		l, err := NewReentrant(env)
		if err == nil {
			l.(*Reentrant).reenter = redis.NewScript(brokenReentrantReenterSource)
		}
		return l, err
	},
	Description: "reentrant lock whose re-entry does not check that the caller still owns the key (HINCRBY and PEXPIRE whoever holds): an owner stopped past its TTL re-enters the next owner's key"}
