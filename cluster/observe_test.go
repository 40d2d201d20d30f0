package cluster_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// oneNode is a redis-server of the test's, and a client of it.
func oneNode(t *testing.T) (*cluster.Cluster, *cluster.Node, *redis.Client) {
	c := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr, Password: c.Password})
	t.Cleanup(func() { rc.Close() })
	return c, c.Nodes[0], rc
}

// TestKeyWatch_WhatTheNodeDid: a node's record of what it did to keys
// is Redis's: a SET NX that took the key counts, one refused (the key
// taken) does not, nor a GET; a DEL and an expiry end a key's span;
// nothing after Close counts; and two nodes' logs overlap only where
// both held a key at once.
func TestKeyWatch_WhatTheNodeDid(t *testing.T) {
	c, n, rc := oneNode(t)
	ctx := context.Background()
	w, err := c.WatchKeys(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Sets(); got != 0 {
		t.Errorf("before any set: %d, want 0", got)
	}
	nx := func(k string, ttl time.Duration) {
		if err := rc.SetArgs(ctx, k, "tok-"+k, redis.SetArgs{Mode: "NX", TTL: ttl}).Err(); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	nx("lock:a", 10*time.Second)
	nx("lock:b", 100*time.Millisecond) // expires
	nx("lock:a", 10*time.Second)       // refused: lock:a is held
	_ = rc.Get(ctx, "lock:a").Err()
	if err := rc.Del(ctx, "lock:a").Err(); err != nil {
		t.Fatal(err)
	}
	// A lock whose key is a hash (a re-entrant lock's HSET, its count
	// raised again by HINCRBY, its TTL moved by PEXPIRE): one grant.
	for _, cmd := range [][]any{{"hset", "lock:h", "tok", 1}, {"hincrby", "lock:h", "tok", 1}, {"pexpire", "lock:h", 10000}, {"del", "lock:h"}} {
		if err := rc.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// lock:b's TTL runs out; an access expires it at once.
	time.Sleep(150 * time.Millisecond)
	_ = rc.Get(ctx, "lock:b").Err()
	// A node's notifications come in the order it sent them: once a
	// last grant (a marker) is counted, every event before it is noted,
	// with no wait left to chance.
	nx("lock:end", 10*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for w.Sets() < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	log := w.Close()
	if got := w.Sets(); got != 4 {
		t.Errorf("three keys taken (two strings, a hash) and the marker, one refused: counted %d, want 4", got)
	}
	for _, k := range []string{"lock:a", "lock:b", "lock:h"} {
		if s := log[k]; len(s) != 1 || s[0].To == 0 || s[0].To < s[0].From {
			t.Errorf("%s: spans %v, want one that ended (deleted, expired)", k, s)
		}
	}
	nx("lock:c", time.Second)
	if got := w.Sets(); got != 4 {
		t.Errorf("a set after Close: counted %d, want still 4", got)
	}
	if ev, _ := rc.ConfigGet(ctx, "notify-keyspace-events").Result(); ev["notify-keyspace-events"] != "" {
		t.Errorf("notify-keyspace-events left as %q, want it off again", ev["notify-keyspace-events"])
	}
	a := log["lock:a"][0]
	for _, tc := range []struct {
		other cluster.KeyLog
		want  int64
	}{
		{cluster.KeyLog{"lock:a": {{From: a.From - 2, To: a.From - 1}}}, 0},      // before
		{cluster.KeyLog{"lock:a": {{From: a.To + 1}}}, 0},                        // after, still held
		{cluster.KeyLog{"lock:a": {{From: a.From + 1}}}, 1},                      // during, still held
		{cluster.KeyLog{"lock:a": {{From: a.From - 1, To: a.From + 1}}}, 1},      // across its start
		{cluster.KeyLog{"lock:z": {{From: a.From, To: a.To}}}, 0},                // another key
		{cluster.KeyLog{"lock:a": {{From: 1, To: 2}, {From: a.From, To: 0}}}, 1}, // its second span
	} {
		if got := cluster.HeldOnBoth(log, tc.other); got != tc.want {
			t.Errorf("HeldOnBoth(%v, %v) = %d, want %d", log, tc.other, got, tc.want)
		}
	}
}

// TestHolds_LostFrom: the leases a node holds, read from it, and the
// ones another node lacks: a lease missing or held under another token
// is lost; one held the same, or about to expire anyway, or a key with
// no TTL (no lease), is not.
func TestHolds_LostFrom(t *testing.T) {
	c, n, rc := oneNode(t)
	ctx := context.Background()
	for k, ttl := range map[string]time.Duration{"lock:a": 10 * time.Second, "lock:b": 10 * time.Second, "lock:c": 10 * time.Second, "lock:soon": 50 * time.Millisecond} {
		if err := rc.Set(ctx, k, "tok-"+k, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Set(ctx, "counter", "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := c.Holds(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 4 || before["lock:a"].Value != "tok-lock:a" {
		t.Fatalf("Holds = %v, want the four leases (not counter)", before)
	}
	if got := cluster.LostFrom(before, before, 200*time.Millisecond); got != 0 {
		t.Errorf("nothing lost: %d, want 0", got)
	}
	// The promoted node has lock:a as it was, lock:b under another
	// token, no lock:c, and no lock:soon (expired anyway).
	after := cluster.Holdings{"lock:a": before["lock:a"], "lock:b": {Value: "tok-other", TTL: time.Second}}
	if got := cluster.LostFrom(before, after, 200*time.Millisecond); got != 2 {
		t.Errorf("lock:b retaken and lock:c gone: %d lost, want 2", got)
	}
}

// TestKeyWatch_LostRetaken: of the leases a promotion lost (LostKeys),
// those whose key the promoted node granted again, read from its
// keyspace notifications, while they would still have held it
// (SetBefore): counted when the grant comes before the lost lease's
// expiry, not after it, and not for a key that was not lost.
func TestKeyWatch_LostRetaken(t *testing.T) {
	c, n, rc := oneNode(t)
	ctx := context.Background()
	before := cluster.Holdings{"lock:a": {Value: "tok-a", TTL: 10 * time.Second}, "lock:b": {Value: "tok-b", TTL: 10 * time.Second},
		"lock:kept": {Value: "tok-k", TTL: 10 * time.Second}}
	after := cluster.Holdings{"lock:kept": before["lock:kept"]}
	lost := cluster.LostKeys(before, after, 200*time.Millisecond)
	if len(lost) != 2 || !reflect.DeepEqual(lost["lock:a"], before["lock:a"]) {
		t.Fatalf("LostKeys = %v, want lock:a and lock:b with their TTLs", lost)
	}
	w, err := c.WatchKeys(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	// lock:a is granted again; lock:kept is set too (not lost); lock:b
	// stays free. The marker makes sure every event before it is noted.
	for _, k := range []string{"lock:a", "lock:kept", "lock:end"} {
		if err := rc.SetNX(ctx, k, "other", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.Sets() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	log := w.Close()
	now := time.Now()
	due := map[string]cluster.Due{}
	for k, h := range lost {
		due[k] = cluster.Due{Value: h.Value, Until: now.Add(h.TTL).UnixNano()}
	}
	if got := cluster.SetBefore(log, due); len(got) != 1 || got[0].Key != "lock:a" || got[0].Token != "tok-a" || got[0].At != log["lock:a"][0].From {
		t.Errorf("lock:a granted again while its lost lease would still hold it: %v, want lock:a with tok-a at its set (log %v)", got, log)
	}
	for k, d := range due {
		d.Until = now.Add(-time.Minute).UnixNano() // the lost leases had expired by then
		due[k] = d
	}
	if got := cluster.SetBefore(log, due); len(got) != 0 {
		t.Errorf("grants after the lost leases expired: %v, want none", got)
	}
}

// TestSetBefore_LastSet: a split brain's promoted master is watched from
// its promotion, so its log may show a key set and freed before the
// deposed master granted the lease the heal lost: the grant reported is
// the last one before the lost lease's expiry, which alone can overlap
// it, and none at all when every set came after that expiry.
func TestSetBefore_LastSet(t *testing.T) {
	log := cluster.KeyLog{"lock:a": {{From: 100, To: 200}, {From: 500}, {From: 2000}}}
	due := map[string]cluster.Due{"lock:a": {Value: "tok", Until: 1000}}
	if got := cluster.SetBefore(log, due); len(got) != 1 || got[0].At != 500 || got[0].Token != "tok" {
		t.Errorf("SetBefore = %v, want lock:a at 500 (the last set before 1000)", got)
	}
	due["lock:a"] = cluster.Due{Value: "tok", Until: 50}
	if got := cluster.SetBefore(log, due); len(got) != 0 {
		t.Errorf("SetBefore = %v, want none: every set came after the lease's expiry", got)
	}
}
