package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlockGuardedEntry is "redlock-guarded": Redlock that enforces on
// each node the two assumptions its safety rests on, instead of taking
// them on trust (Kleppmann's "How to do distributed locking", and the
// Redlock documentation's answer to it):
//
//   - a node that lost its keys (restarted without persistence, or a
//     replica promoted in its place) must not vote before every lease it
//     could have held has expired: the documentation's delayed restart,
//     done by the lock. Each node keeps a marker key (no TTL, laid when
//     the lock is built); a node found without it is new or restarted
//     empty, and abstains for the TTL from then on (the marker's value
//     is the node time its vote resumes);
//   - a node's clock must agree with the client's: a node whose TIME,
//     read in the acquire's own script, falls outside the client's send
//     and receive times widened by Redlock's drift allowance has jumped
//     or drifts, its TTLs are not the client's, and its vote is not
//     counted; and a node whose clock jumped forward expired keys early
//     that stay gone when it comes back, so a node whose TIME reads
//     behind the last its scripts read abstains for the TTL, as a
//     restarted one does (clock-quorum, under load: the jumped node's
//     clock was set back 300 ms before a second client, its vote
//     counted again, took a majority from a lease still valid).
//
// What it cannot guard against is what no Redlock can: a holder paused
// past its validity (pause): only a fencing token at the resource can.
var redlockGuardedEntry = Entry{Name: "redlock-guarded", Factory: newRedlockGuarded, Topology: "redlock",
	Description: "Redlock that enforces its assumptions on each node: a node that lost its keys abstains for a TTL (the delayed restart, done by the lock), a node whose clock disagrees with the client's is not counted"}

// guardMarker is the key each node of redlock-guarded keeps: its value
// is the node time (ms) from which the node may vote. guardLast is the
// node time its last script read: a clock found behind it went back.
const (
	guardMarker = "lockcheck:redlock-guard"
	guardLast   = "lockcheck:redlock-guard:last"
)

// guardPreamble opens each of redlock-guarded's scripts: KEYS[1] is
// the lock's key, KEYS[2] the marker, KEYS[3] the last time read,
// ARGV[2] the TTL (ms) for the acquire and the extend, the quarantine
// for all three. A node without its marker (restarted empty), or whose
// clock reads behind the last script's (it jumped forward and came
// back: the keys it expired early are gone, and its clock looks right
// again), abstains for the quarantine from then on. A script answers
// {outcome, node time in ms}: outcome -1 when the node abstains, else 1
// (set, deleted, extended) or 0 (the key taken, or not ours).
const guardPreamble = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
redis.call('SET', KEYS[3], now)
local from = redis.call('GET', KEYS[2])
if not from or now < last then
  redis.call('SET', KEYS[2], math.max(tonumber(from or '0'), now + tonumber(ARGV[2])))
  return {-1, now}
end
if now < tonumber(from) then
  return {-1, now}
end
`

var (
	guardedAcquireScript = redis.NewScript(guardPreamble + `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, now} end
return {0, now}`)
	guardedReleaseScript = redis.NewScript(guardPreamble + `
if redis.call('GET', KEYS[1]) == ARGV[1] then return {redis.call('DEL', KEYS[1]), now} end
return {0, now}`)
	guardedExtendScript = redis.NewScript(guardPreamble + `
if redis.call('GET', KEYS[1]) == ARGV[1] then return {redis.call('PEXPIRE', KEYS[1], ARGV[2]), now} end
return {0, now}`)
)

// errAbstained is a node's answer that counts neither way: it lost its
// keys within a TTL, or its clock is not the client's.
var errAbstained = errors.New("the node abstains")

func newRedlockGuarded(env Env) (Locker, error) {
	l, err := NewRedlock(env)
	if err != nil {
		return nil, err
	}
	r := l.(*Redlock)
	// The deployment: every node votes from the start. A node that loses
	// the marker later lost every key with it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range r.nodes {
		if err := c.SetNX(ctx, guardMarker, 0, 0).Err(); err != nil && !refused(err) {
			_ = r.Close()
			return nil, err
		}
	}
	r.guarded = true
	return r, nil
}

// guarded runs one of redlock-guarded's scripts on a node: its answer
// counts only if the node has not lost its keys within a TTL and its
// clock agrees with ours, within the drift allowance, over the round
// trip; else the node abstains (errAbstained).
func guarded(sc *redis.Script, key, token string, ttl time.Duration) func(ctx context.Context, c redis.UniversalClient) (bool, error) {
	return func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		sent := time.Now()
		res, err := sc.Run(ctx, c, []string{key, guardMarker, guardLast}, token, ttl.Milliseconds()).Int64Slice()
		got := time.Now()
		if err != nil {
			return false, err
		}
		if len(res) != 2 {
			return false, errors.New("redlock-guarded: a script answered no node time")
		}
		d := drift(ttl) + time.Millisecond // TIME's milliseconds are truncated
		at := time.UnixMilli(res[1])
		if res[0] < 0 || at.Before(sent.Add(-d)) || at.After(got.Add(d)) {
			return false, errAbstained
		}
		return res[0] == 1, nil
	}
}
