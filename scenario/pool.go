package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// pool is pool: renewals waiting in an exhausted connection pool,
// their holders working on. starve's workload, each client with a lock
// of its own over a pool of two connections.
var pool = Scenario{Name: "pool", Description: "pool: holds of 1 s under a 500 ms TTL kept alive by renewals every TTL/3, 20 clients on 5 keys, each client with a lock of its own over a pool of 2 connections, and for 8 clients the application's own blocking reads taking both connections for 1.5 TTL as the client enters its section: its renewals wait in the pool past the lease's end while the holder works on",
	Workload: func(w *workload.Config) {
		w.TTL, w.Hold, w.HoldDist, w.Margin, w.OpTimeout, w.Duration = 500*time.Millisecond, time.Second, workload.HoldFixed, 50*time.Millisecond, time.Second, 8*time.Second
		w.PoolPerClient = 2
	},
	Nemesis: nemesis.Config{Faults: []string{nemesis.ClientPool}, Interval: time.Second, Duration: 1500 * time.Millisecond},
	Extends: true, Needs: []Need{poolGiven, extendsLeases},
	Requires: checker.Coverage{history.RenewalPoolWait: 5}}

// poolGiven is what pool needs of a lock: its Redis client made by
// lockcheck (lockimpl.Env), which sizes its pool, and a mutex (each
// client's lock is the lock's Locker alone, without a shape's
// capabilities).
func poolGiven(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	switch {
	case p.OwnClient:
		return "its fault takes the connections of the pool lockcheck gives the lock's Redis client, and the lock has a client of its own (a lock process would be told its pool's size in its environment, which the lock-process protocol does not do yet)", req
	case p.Shape != "" && p.Shape != Mutex:
		return "a lock a client is made for a mutex only: a " + p.Shape + "'s capabilities are not passed through yet", req
	}
	return "", req
}
