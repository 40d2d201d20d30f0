package nemesis

import (
	"context"
	"github.com/lockcheck/lockcheck/history"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/ctxwait"
)

// killRedis is kill-redis. On a node restarted without persistence, it
// reads what the node holds just before it kills it, writes paused from
// the read to the kill: the leases live then are what the restart drops,
// for the node starts empty (history.LostAtRestart). With appendfsync everysec it
// is the host's crash, not only the server's (cluster.AOFMark): it marks
// where each node's AOF ends, lets a second of writes through (what
// everysec may not have fsynced), reads what the nodes hold, kills them
// and cuts their AOF back to the mark; the leases whose grant the cut
// dropped are what the restart loses (history.UnsyncedAtKill). With appendfsync
// always nothing is lost, and nothing is counted.
type killRedis struct {
	env Env
	target
	lost     int64 // -1: not counted
	unsynced int64 // -1: not counted
	// due is, by node, each lease its restart drops: its value and when
	// it would have expired: a grant of its key before then, once the
	// node is back, is history.LostRetaken.
	due    map[*cluster.Node]map[string]cluster.Due
	events map[string]int64
	retakes
	marked   func() // called once the AOFs are marked (a test's hook)
	watching func() // called once the restarted nodes are watched (a test's hook)
}

// unsyncedSecond is how much of what a node wrote before its kill a power
// loss drops under appendfsync everysec.
const unsyncedSecond = time.Second

// Events is the last window's count of leases a restart dropped.
func (k *killRedis) Events() map[string]int64 {
	e := k.events
	k.events = nil
	return e
}

// Hold: the nodes stay down for the restart delay.
func (k *killRedis) Hold() time.Duration { return k.env.RestartDelay }

// countLost counts the leases the killed nodes held before the kill
// (before, read at at), live past margin, that a restart without
// persistence drops, and remembers when each would have ended.
func (k *killRedis) countLost(before map[*cluster.Node]cluster.Holdings, at time.Time, margin time.Duration) {
	k.lost = 0
	k.due = map[*cluster.Node]map[string]cluster.Due{}
	for n, h := range before {
		lost := cluster.LostKeys(h, nil, margin)
		k.lost += int64(len(lost))
		// The TTL was read after at: the lease ends no sooner.
		if due := cluster.Dues(lost, at, 0); len(due) > 0 {
			k.due[n] = due
		}
	}
}

func (k *killRedis) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	k.lost, k.unsynced = -1, -1
	empty := k.env.Cluster.Persistence == "none"
	marks := map[*cluster.Node]cluster.AOFMark{}
	if k.env.Cluster.Persistence == "aof-everysec" {
		for _, n := range k.env.Cluster.Nodes {
			if m, err := n.MarkAOF(); err == nil {
				marks[n] = m
			}
		}
		if k.marked != nil {
			k.marked()
		}
		if len(marks) > 0 && !ctxwait.Sleep(ctx, unsyncedSecond) {
			return nil, ctx.Err()
		}
	}
	at := time.Now()
	// Leases that expire before the restart are no loss.
	margin := func() time.Duration { return time.Since(at) + k.env.RestartDelay + 100*time.Millisecond }
	before := map[*cluster.Node]cluster.Holdings{}
	var unsynced []int64
	names, err := k.start(ctx, k.env, rng, func(n *cluster.Node) error {
		m, power := marks[n]
		var h cluster.Holdings
		var herr error
		if empty || power {
			h, herr = k.env.Cluster.HoldsFrozen(ctx, n, time.Second)
			if herr == nil && empty {
				before[n] = h
			}
		}
		if err := n.Kill(); err != nil || !power {
			return err
		}
		cut, err := n.CutAOF(m)
		if err == nil && herr == nil {
			unsynced = append(unsynced, int64(len(cluster.UnsyncedKeys(h, cut, margin()))))
		}
		return err
	})
	if empty && len(before) == len(names) {
		k.countLost(before, at, margin())
	}
	if len(unsynced) == len(names) && len(names) > 0 {
		k.unsynced = 0
		for _, u := range unsynced {
			k.unsynced += u
		}
	}
	return names, err
}

func (k *killRedis) Stop(ctx context.Context) error {
	switch {
	case k.lost >= 0:
		k.events = map[string]int64{history.LostAtRestart: k.lost}
	case k.unsynced >= 0:
		k.events = map[string]int64{history.UnsyncedAtKill: k.unsynced}
	}
	due := k.due
	k.due = nil
	var watches []*cluster.KeyWatch
	var lost []map[string]cluster.Due
	err := k.stop(func(n *cluster.Node) error {
		if err := n.Restart(ctx, k.env.Cluster.Password); err != nil {
			return err
		}
		// The bug's event: a dropped lease's key granted again while the
		// lease would still have held it. Grants before the watch
		// began are missed (conservative).
		if len(due[n]) > 0 {
			if w, err := k.env.Cluster.WatchKeys(ctx, n); err == nil {
				watches, lost = append(watches, w), append(lost, due[n])
			}
		}
		return nil
	})
	if k.watching != nil {
		k.watching()
	}
	switch {
	case k.lost >= 0 && len(watches) == len(due):
		for i, w := range watches {
			k.await(ctx, w, lost[i])
		}
		k.events[history.LostRetaken] = int64(len(k.retaken))
	default:
		for _, w := range watches {
			w.Close()
		}
	}
	return err
}

// killRedisKind is the "kill-redis" fault.
var killRedisKind = Kind{Needs: Needs{Redis: true, Servers: true}, Name: "kill-redis", Description: "SIGKILL a Redis node (--nemesis-targets) and restart it after --restart-delay (data kept only with --persistence aof-*; with aof-everysec the host's crash: the node is killed a second after the window opens and its AOF cut back to where it ended then, the second everysec may not have fsynced)",
	New: func(e Env) (Fault, error) { return &killRedis{env: e}, nil }}
