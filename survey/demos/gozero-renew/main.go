// gozero-renew shows what breaks go-zero's RedisLock at extend and
// cut-off (docs/survey.md): it has no extend, a holder renews by calling
// AcquireCtx again, and a renewal that reaches Redis when the key is free
// takes it again.
//
//	cd survey && go run ./demos/gozero-renew
//
// Library: github.com/zeromicro/go-zero v1.10.3, core/stores/redis
// (go-redis v9.23.0 underneath). The lines it rests on, at v1.10.3:
//   - redislock.go:60-81: AcquireCtx runs lockscript.lua with the lock's
//     id and SetExpire's seconds*1000+500 ms (tolerance, redislock.go:19).
//   - lockscript.lua:1-3: `if GET == id then SET PX; return "OK"`, and
//     lockscript.lua:5: `else return SET NX PX`: the same call acquires
//     and renews, and takes a free key either way.
//   - redislock.go:89-101, delscript.lua:1-5: ReleaseCtx deletes the key
//     if it holds the id.
//
// go-zero documents renewal as this same call: its Redis lock page
// (https://go-zero.dev/docs/tutorials/redis/redis-lock) says the lock is
// "可重入，自动续约" (re-entrant, renews automatically) and documents only
// NewRedisLock, SetExpire, Acquire(Ctx) and Release(Ctx); the demo renews
// by AcquireCtx as that page and lockscript.lua's first branch imply.
//
// Three parts, each against its own key on one redis-server it starts:
//  1. extend, after a release: A acquires (SetExpire(1)), releases, and a
//     renewal (AcquireCtx) follows, as a renewer running beside the
//     holder sends it: it answers true, and B (another RedisLock, another
//     client) is refused until the renewal's 1.5 s run out, though
//     nobody holds the lock.
//  2. extend, after an expiry: A's key expires, B acquires; A's renewal
//     while B holds answers false (the SET NX is refused: this much is
//     safe); B releases; A's next renewal answers true, a success that
//     covers a lapse in which B held the lock.
//  3. cut-off: A (SetExpire(7), so that its key outlives what follows)
//     sends a renewal that a proxy in the demo holds on the wire; the
//     renewal's context has a 300 ms deadline, which go-redis ignores
//     (go-zero leaves ContextTimeoutEnabled false, go-redis
//     options.go:174-176), so AcquireCtx gives up at go-redis's default
//     ReadTimeout, 5 s (options.go:741), and answers false. A releases on
//     another connection (true), then the held renewal reaches Redis: the
//     key is taken again for A, who let go, and B is refused for 7.5 s.
//
// Departs from the docs in nothing (the 300 ms deadline is AcquireCtx's
// documented argument, and changes nothing). Exit 1 when all
// three parts show the mechanism, 0 when any does not, 2 when it could
// not run; redis-server and the proxy are stopped in every case.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/lockcheck/lockcheck/survey/demos/demoredis"
)

func main() { demoredis.Main(18*time.Second, run) }

func run(ctx context.Context) (int, error) {
	logx.Disable()
	srv, err := demoredis.StartServer(ctx, "redis")
	if err != nil {
		return 0, err
	}
	direct := redis.MustNewRedis(redis.RedisConf{Host: srv.Addr(), Type: redis.NodeType})
	shown := 0
	for _, part := range []func(context.Context, *redis.Redis, string) (bool, error){renewAfterRelease, renewAfterExpiry, cutOff} {
		ok, err := part(ctx, direct, srv.Addr())
		if err != nil {
			return 0, err
		}
		if ok {
			shown++
		}
	}

	if shown == 3 {
		fmt.Println("a renewal by AcquireCtx takes a free key: a lock nobody holds refuses everyone until its TTL (+500 ms) runs out (go-zero v1.10.3)")
		return demoredis.Shown, nil
	}
	fmt.Printf("the mechanism showed in %d of 3 parts\n", shown)
	return demoredis.NotShown, nil
}

// renewAfterRelease is part 1: a renewal after the holder's release takes the free key and refuses B.
func renewAfterRelease(ctx context.Context, direct *redis.Redis, _ string) (bool, error) {
	a, b := redis.NewRedisLock(direct, "renew-after-release"), redis.NewRedisLock(direct, "renew-after-release")
	a.SetExpire(1)
	b.SetExpire(1)
	ok1, err := a.AcquireCtx(ctx)
	if err != nil || !ok1 {
		return false, fmt.Errorf("A's first acquire: %v %v", ok1, err)
	}
	rel, err := a.ReleaseCtx(ctx)
	if err != nil {
		return false, err
	}
	renewed, err := a.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	t0 := time.Now()
	bGot, err := b.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	var freed time.Duration
	if !bGot {
		w, cancel := demoredis.Within(ctx, 4*time.Second)
		err = demoredis.WaitFor(w, "B to acquire the key A's renewal took", func() bool {
			got, _ := b.AcquireCtx(w)
			return got
		})
		cancel()
		if err != nil {
			return false, err
		}
		freed = time.Since(t0)
	}
	fmt.Printf("1. A released (%v), then renewed by AcquireCtx: %v; B's acquire: %v; B acquired %v later (the renewal's 1 s + 500 ms)\n",
		rel, renewed, bGot, freed.Round(10*time.Millisecond))
	return rel && renewed && !bGot, nil
}

// renewAfterExpiry is part 2: after A's key expired and B held, A's next renewal succeeds across the lapse.
func renewAfterExpiry(ctx context.Context, direct *redis.Redis, addr string) (bool, error) {
	a, b := redis.NewRedisLock(direct, "renew-after-expiry"), redis.NewRedisLock(direct, "renew-after-expiry")
	a.SetExpire(1)
	b.SetExpire(1)
	if ok, err := a.AcquireCtx(ctx); err != nil || !ok {
		return false, fmt.Errorf("A's acquire: %v %v", ok, err)
	}
	w, cancel := demoredis.Within(ctx, 4*time.Second)
	err := demoredis.WaitFor(w, "A's key to expire (1.5 s)", func() bool {
		e, err := demoredis.Exists(w, addr, "renew-after-expiry")
		return err == nil && !e
	})
	cancel()
	if err != nil {
		return false, err
	}
	bGot, err := b.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	whileB, err := a.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	bRel, err := b.ReleaseCtx(ctx)
	if err != nil {
		return false, err
	}
	after, err := a.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	fmt.Printf("2. A's key expired; B acquired: %v; A's renewal while B held: %v; B released: %v; A's next renewal: %v\n",
		bGot, whileB, bRel, after)
	return bGot && !whileB && bRel && after, nil
}

// renewalHold is the proxy's hook for part 3: once armed, it holds the next renewal on the wire.
type renewalHold struct {
	hold  chan struct{}
	held  chan struct{}
	armed atomic.Bool
}

// onCommand holds lockscript's EVALSHA (or EVAL) when armed, once, and says so on held.
func (h *renewalHold) onCommand(args []string) demoredis.Action {
	// lockscript's EVALSHA (or EVAL) has 6 arguments: sha 1 key id ms
	if len(args) == 6 && strings.HasPrefix(strings.ToLower(args[0]), "eval") {
		if !h.armed.CompareAndSwap(true, false) {
			return demoredis.Action{}
		}
		h.held <- struct{}{}
		return demoredis.Action{Hold: h.hold}
	}
	return demoredis.Action{}
}

// cutOff is part 3: a renewal held on the wire reaches Redis after the release and takes the key again.
func cutOff(ctx context.Context, direct *redis.Redis, addr string) (bool, error) {
	h := &renewalHold{hold: make(chan struct{}), held: make(chan struct{}, 1)}
	proxy, err := demoredis.StartProxy(addr, h.onCommand)
	if err != nil {
		return false, err
	}
	cut := redis.MustNewRedis(redis.RedisConf{Host: proxy.Addr(), Type: redis.NodeType})
	a, b := redis.NewRedisLock(cut, "cut-off"), redis.NewRedisLock(direct, "cut-off")
	a.SetExpire(7) // outlives the stuck renewal (5 s)
	b.SetExpire(7)
	if ok, err := a.AcquireCtx(ctx); err != nil || !ok {
		return false, fmt.Errorf("A's acquire through the proxy: %v %v", ok, err)
	}
	h.armed.Store(true)
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	sent := time.Now()
	late, lateErr := a.AcquireCtx(rctx)
	stuck := time.Since(sent)
	rcancel()
	select {
	case <-h.held:
	default:
		return false, fmt.Errorf("the proxy never held A's renewal (renewal answered %v %v)", late, lateErr)
	}

	rel, err := a.ReleaseCtx(ctx)
	if err != nil {
		return false, fmt.Errorf("A's release: %w", err)
	}
	close(h.hold)
	w, cancel := demoredis.Within(ctx, 4*time.Second)
	err = demoredis.WaitFor(w, "the held renewal to reach Redis and set the key", func() bool {
		e, err := demoredis.Exists(w, addr, "cut-off")
		return err == nil && e
	})
	cancel()
	if err != nil {
		return false, err
	}
	bGot, err := b.AcquireCtx(ctx)
	if err != nil {
		return false, err
	}
	pttl, _ := demoredis.Do(ctx, addr, "PTTL", "cut-off")
	fmt.Printf("3. A's renewal held on the wire answered %v after %v (%v); A released: %v; the renewal then reached Redis: key set again (PTTL %s ms), B's acquire: %v\n",
		late, stuck.Round(100*time.Millisecond), lateErr, rel, strings.TrimPrefix(pttl, ":"), bGot)
	return !late && rel && !bGot, nil
}
