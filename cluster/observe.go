package cluster

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

// What a node did, read from the node: the coverage figures that say a
// fault's bug had its chance (a split brain's deposed master granting
// keys, a promotion that lost keys) are counted on the servers, not
// guessed from the clients' side.

// KeyWatch records what a node does to keys from its start until Close,
// from the node's keyspace notifications: each set (a lock's grant), and
// each delete or expiry that ends a key. It sees the node's own writes,
// not what a master replicates to it.
type KeyWatch struct {
	c    *redis.Client
	ps   *redis.PubSub
	wg   sync.WaitGroup
	once sync.Once

	mu   sync.Mutex
	sets int64
	log  KeyLog
}

// KeyLog is, by key, the spans in which a node held it: from a set to
// the delete or expiry that ended it (To 0: still held at the end).
type KeyLog map[string][]KeySpan

// KeySpan is one span of a KeyLog, in Unix ns as lockcheck received the
// node's notifications.
type KeySpan struct{ From, To int64 }

// keyEvents are a node's keyevent channels: the event is the channel's
// tail (set, hset, del, expired, ...), the key the message.
const keyEvents = "__keyevent@0__:"

// WatchKeys starts recording what node n does to keys, on a direct
// connection (not through its peer proxy, which a partition cuts).
func (cl *Cluster) WatchKeys(ctx context.Context, n *Node) (*KeyWatch, error) {
	c := cl.admin(n)
	// E: keyevent channels; A: every class of command (a lock's key may
	// be a string, a hash, ...), expiry and eviction included.
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "EA").Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("watch %s: %w", n.Name, err)
	}
	w := &KeyWatch{c: c, ps: c.PSubscribe(ctx, keyEvents+"*"), log: KeyLog{}}
	// The subscription is in place once its confirmation came: what the
	// node does after this is recorded.
	if _, err := w.ps.Receive(ctx); err != nil {
		w.ps.Close()
		c.Close()
		return nil, fmt.Errorf("watch %s: %w", n.Name, err)
	}
	ch := w.ps.Channel()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for m := range ch {
			w.note(m.Channel, m.Payload, time.Now().UnixNano())
		}
	}()
	return w, nil
}

// note records one event: one that ends a key ends its span; a write
// to a key not held starts one (a grant: SET, HSET, ... of a new key);
// a write to a held key (an extend, a re-entry) and a change of its TTL
// go on.
func (w *KeyWatch) note(channel, key string, at int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	spans := w.log[key]
	open := len(spans) > 0 && spans[len(spans)-1].To == 0
	switch ev := strings.TrimPrefix(channel, keyEvents); ev {
	case "del", "expired", "evicted", "unlink":
		if open {
			spans[len(spans)-1].To = at
		}
	case "expire", "persist", "rename_from", "rename_to", "new":
	default:
		if !open {
			w.sets++
			w.log[key] = append(spans, KeySpan{From: at})
		}
	}
}

// Log is a copy of what the watch recorded so far.
func (w *KeyWatch) Log() KeyLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(KeyLog, len(w.log))
	for k, spans := range w.log {
		out[k] = append([]KeySpan(nil), spans...)
	}
	return out
}

// Sets is how many keys the node set so far (a write to a key it did
// not hold).
func (w *KeyWatch) Sets() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sets
}

// Close stops the record, turns the node's notifications off again, and
// returns what it recorded.
func (w *KeyWatch) Close() KeyLog {
	w.once.Do(func() {
		w.ps.Close()
		w.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = w.c.ConfigSet(ctx, "notify-keyspace-events", "").Err()
		cancel()
		w.c.Close()
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log
}

// HeldOnBoth counts the keys two nodes held at once by their logs (a
// split brain's two masters granting the same key): a span of one that
// overlaps a span of the other, a span still open counting as open until
// the end.
func HeldOnBoth(a, b KeyLog) int64 {
	var n int64
	for k, as := range a {
		if overlap(as, b[k]) {
			n++
		}
	}
	return n
}

func overlap(as, bs []KeySpan) bool {
	end := func(s KeySpan) int64 {
		if s.To == 0 {
			return math.MaxInt64
		}
		return s.To
	}
	for _, x := range as {
		for _, y := range bs {
			if x.From < end(y) && y.From < end(x) {
				return true
			}
		}
	}
	return false
}

// Holdings are a node's keys that hold a lease: each key's value (a
// lock's token, for string keys) and its remaining time to live.
type Holdings map[string]Holding

// Holding is one key of Holdings.
type Holding struct {
	Value string
	TTL   time.Duration
	// Members are, for a key that is a sorted set, a hash or a set (a
	// semaphore's, a read-write lock's, a reentrant lock's), its members
	// or fields: the tokens of the leases it holds.
	Members []string
	// Conn says the lease is a subscription (a lock held by a
	// connection: its key is SubscriptionKey of the channel): it has no
	// TTL (ConnHeldTTL), and no restart, persisted or not, and no
	// promoted replica has it.
	Conn bool
}

// SubscriptionKey is the Holdings key of a subscription to channel.
func SubscriptionKey(channel string) string { return "subscription:" + channel }

// ConnHeldTTL is the TTL of a subscription's Holding: a day, longer than
// any run, for a lease that ends only with its connection.
const ConnHeldTTL = 24 * time.Hour

// Holds reads, on a direct connection, every key node n holds that expires (a lease: a key without a
// TTL is no lease), with its value if it is a string; a batch of keys
// to a round trip, so that a fault that reads a master before it kills
// it waits little. Every channel a client is subscribed to (not Redis's
// or Sentinel's own, named "__...") is a lease too, held by a
// connection (Holding.Conn): a lock held as a subscription keeps no key.
func (cl *Cluster) Holds(ctx context.Context, n *Node) (Holdings, error) {
	c := cl.admin(n)
	defer c.Close()
	return holds(ctx, c)
}

// HoldsFrozen is Holds with node n's writes paused first, for up to d
// (CLIENT PAUSE WRITE): what it read stays what n holds until the pause
// ends, for a fault that kills n right after the read.
func (cl *Cluster) HoldsFrozen(ctx context.Context, n *Node, d time.Duration) (Holdings, error) {
	c := cl.admin(n)
	defer c.Close()
	if err := c.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		return nil, err
	}
	return holds(ctx, c)
}

// holds reads every lease c's node holds.
func holds(ctx context.Context, c *redis.Client) (Holdings, error) {
	out := Holdings{}
	if err := subscriptions(ctx, c, out); err != nil {
		return out, err
	}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			return out, err
		}
		pipe := c.Pipeline()
		ttls, vals := make([]*redis.DurationCmd, len(keys)), make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			ttls[i], vals[i] = pipe.PTTL(ctx, k), pipe.Get(ctx, k)
		}
		_, _ = pipe.Exec(ctx) // a key gone or not a string errs on its own
		var others []string
		for i, k := range keys {
			if ttl, err := ttls[i].Result(); err == nil && ttl > 0 {
				out[k] = Holding{Value: vals[i].Val(), TTL: ttl}
				if vals[i].Err() != nil && vals[i].Err() != redis.Nil {
					others = append(others, k)
				}
			}
		}
		if err := members(ctx, c, others, out); err != nil {
			return out, err
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// members reads the members of each of keys (leases of out that are no
// string) that is a sorted set, a hash or a set into out.
func members(ctx context.Context, c *redis.Client, keys []string, out Holdings) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	pipe = c.Pipeline()
	got := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		switch types[i].Val() {
		case "zset":
			got[i] = pipe.ZRange(ctx, k, 0, -1)
		case "hash":
			got[i] = pipe.HKeys(ctx, k)
		case "set":
			got[i] = pipe.SMembers(ctx, k)
		}
	}
	_, _ = pipe.Exec(ctx) // a key gone since errs on its own
	for i, k := range keys {
		if got[i] != nil && got[i].Err() == nil {
			h := out[k]
			h.Members = got[i].Val()
			out[k] = h
		}
	}
	return nil
}

// subscriptions adds to out the channels c's node has subscribers of,
// but Redis's and Sentinel's own ("__..."): the leases of a lock held by
// a connection's subscription.
func subscriptions(ctx context.Context, c *redis.Client, out Holdings) error {
	chans, err := c.PubSubChannels(ctx, "*").Result()
	if err != nil {
		return err
	}
	chans = slices.DeleteFunc(chans, func(ch string) bool { return strings.HasPrefix(ch, "__") })
	if len(chans) == 0 {
		return nil
	}
	subs, err := c.PubSubNumSub(ctx, chans...).Result()
	if err != nil {
		return err
	}
	for ch, n := range subs {
		if n > 0 {
			out[SubscriptionKey(ch)] = Holding{TTL: ConnHeldTTL, Conn: true}
		}
	}
	return nil
}

// LostFrom counts the leases of before (a master's, just before it went
// down) live for longer than margin that after (the promoted node's)
// lacks, or holds with another value.
func LostFrom(before, after Holdings, margin time.Duration) int64 {
	return int64(len(LostKeys(before, after, margin)))
}

// LostKeys is LostFrom's leases: what before held of each key (its
// value, and what was left of its TTL when before was read).
func LostKeys(before, after Holdings, margin time.Duration) Holdings {
	lost := Holdings{}
	for k, h := range before {
		if h.TTL <= margin {
			continue
		}
		if a, ok := after[k]; !ok || a.Value != h.Value {
			lost[k] = h
		}
	}
	return lost
}

// Due is a lease a node lost: the value it held, and when the lease
// would have expired (Unix ns).
type Due struct {
	Value string
	Until int64
}

// Dues are the leases of lost whose key a node could grant again, each
// with when it would have ended (at plus its TTL, less early): not a
// subscription's (Holding.Conn), which no SET can take again.
func Dues(lost Holdings, at time.Time, early time.Duration) map[string]Due {
	due := map[string]Due{}
	for k, h := range lost {
		if !h.Conn {
			due[k] = Due{Value: h.Value, Until: at.Add(h.TTL).UnixNano() - int64(early)}
		}
	}
	return due
}

// SetBefore returns the keys of due that log shows set (a grant) before
// their lost lease's Until, in key order: each with the lost lease's
// value as its token, and when its last such set was heard (At in Unix
// ns, not yet on a history's clock). The last, not the first: a log that
// began before the lost lease was granted (a split brain's promoted
// master, watched from its promotion) may show the key set and freed
// before it, and only a set after the lost lease's grant can overlap it.
func SetBefore(log KeyLog, due map[string]Due) []history.Retake {
	var rs []history.Retake
	for k, d := range due {
		at := int64(-1)
		for _, sp := range log[k] {
			if sp.From < d.Until {
				at = sp.From
			}
		}
		if at >= 0 {
			rs = append(rs, history.Retake{Key: k, Token: d.Value, At: at})
		}
	}
	slices.SortFunc(rs, func(a, b history.Retake) int { return strings.Compare(a.Key, b.Key) })
	return rs
}
