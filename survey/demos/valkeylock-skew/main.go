// valkeylock-skew shows what breaks valkeylock at skew
// (docs/survey.md): it computes each key's expiry on the client's clock
// and hands Redis an instant, so with Redis's clock ahead by s >=
// KeyValidity the key is gone at once and another client acquires while
// the holder's context is alive.
//
//	cd survey && go run ./demos/valkeylock-skew
//
// Library: github.com/valkey-io/valkey-go v1.0.79, valkeylock (rueidislock's fork, the same code at the same lines). The lines it
// rests on, in valkeylock/lock.go at v1.0.79:
//   - 258, 265: try takes now := time.Now(), deadline := now.Add(duration).
//   - 171, 437: the acquire runs acqat, SET NX PXAT deadline (ms since the
//     epoch, the client's clock).
//   - 168-169, 436: with FallbackSETPX it runs acqms, SET NX PX duration,
//     relative, instead.
//   - 279-280, 435: every renewal sets deadline = time.Now().Add(validity)
//     and runs extend, PEXPIREAT deadline, in either mode.
//
// The fault: redis-server runs under lockcheck's clock shim
// (cluster/clockshim/clockshim.c, built here with cc and driven through
// its mapped file, as the fault tool; no lockcheck package is imported),
// its clock set 2 s ahead of the client's. Two parts, A and B two
// Lockers set up as the README does for one Redis (KeyMajority 1,
// NoLoopTracking) with KeyValidity 1 s:
//  1. default (PXAT): A acquires; its key does not exist on Redis right
//     after (PXAT is in Redis's past); B acquires while A's context is
//     alive.
//  2. FallbackSETPX: A acquires, its key exists and B is refused (holds
//     shorter than a renewal pass); A's first renewal (ExtendInterval,
//     500 ms) sends PEXPIREAT in Redis's past, which deletes the key and
//     answers 1, so A's context stays alive; B acquires.
//
// A's context is cancelled afterwards, by the invalidation B's SET sends
// A's tracking connection (its extend then fails, lock.go:283-296), or at
// its next renewal. Exit 1 when B acquires while A's context is alive in
// both parts, 0 otherwise, 2 when it could not run; redis-server is
// stopped by PID in every case.
//
// Departs from the README in KeyValidity (1 s, not 5 s: with the default
// the same shows with Redis 5 s ahead) and in TryWithContext for B.
package main

import "github.com/lockcheck/lockcheck/survey/demos/ctxlock"

func main() { ctxlock.Skew(ctxlock.Valkeylock) }
