// valkeylock-pause shows what breaks valkeylock at extend
// (docs/survey.md, pause-holder): the lock is a context with no deadline,
// so a holder whose whole process was stopped for longer than KeyValidity
// wakes with its lock's context alive and writes while another holds.
//
//	cd survey && go run ./demos/valkeylock-pause
//
// Library: github.com/valkey-io/valkey-go v1.0.79, valkeylock (rueidislock's fork, the same code at the same lines). The lines it
// rests on, in valkeylock/lock.go at v1.0.79:
//   - 371: tryonce makes the lock's context with context.WithCancel: no
//     deadline.
//   - 266, 353: try arms time.AfterFunc(duration, cancel) and stops it
//     once the lock is acquired: nothing cancels on time afterwards.
//   - 272-296: only the monitoring goroutine cancels, after an extend
//     (every ExtendInterval, KeyValidity/2) fails, or after an
//     invalidation's extend fails (283-288), lock.go:295-296.
//
// Two processes: the demo re-executes itself as the holder, which sets
// the lock up as the README does for one Redis (KeyMajority 1,
// NoLoopTracking) with KeyValidity 1 s, takes it with WithContext on
// context.Background(), and then, as a holder busy in its critical
// section, checks ctx.Err() without pause and prints a timestamped
// "wrote" every 5 ms while it is nil. The parent SIGSTOPs the holder for
// 2 s (longer than KeyValidity); meanwhile the key expires and a second valkeylock client (in the
// parent) acquires it; then SIGCONT. On waking the holder and the
// library's goroutines (whose renewal, or the invalidation the second
// client's SET sent, cancels the context after a round trip to Redis)
// race (within a millisecond here): a round shows when the holder writes
// first, which it did in about half the rounds on a 2-core machine. Up
// to 12 rounds, a fresh holder and lock each, stopping at the first that
// shows; each prints whether the lock's context has a deadline (it has
// none, so the holder has nothing to check but ctx.Err()). Exit 1
// when one does (the holder wrote with its context alive after the
// second client acquired, and that client still holds), 0 when none
// does, 2 when it could not run; the holders and redis-server are
// stopped by PID in every case.
//
// Departs from the README in KeyValidity (1 s, not the default 5 s, to
// keep the demo short: the mechanism needs only a stop longer than
// KeyValidity) and in TryWithContext for the second client (the README
// waits with WithContext).
package main

import "github.com/lockcheck/lockcheck/survey/demos/ctxlock"

func main() { ctxlock.Pause(ctxlock.Valkeylock) }
