// gozero-resend shows what breaks go-zero's RedisLock at lost-reply
// (docs/survey.md): its Redis client resends a command whose reply was
// lost, so a release whose first attempt deleted the key is sent again,
// finds the key gone (or another's), and answers false.
//
//	cd survey && go run ./demos/gozero-resend
//
// Library: github.com/zeromicro/go-zero v1.10.3, core/stores/redis, over
// github.com/redis/go-redis/v9 v9.23.0. The lines it rests on:
//   - go-zero redisclientmanager.go:14, 37: the client go-zero builds for
//     a node sets MaxRetries: maxRetries, 3.
//   - go-redis redis.go:1593: processWithRetry runs a command for attempt
//     0..MaxRetries, and error.go:88-90 (shouldRetry): io.EOF, a
//     connection that ended without a reply, is retried.
//   - go-zero redislock.go:89-101: ReleaseCtx runs delscript.lua,
//     `if GET == id then return DEL else return 0` (delscript.lua:1-5),
//     and answers reply == 1.
//
// The fault is a reply lost on the wire: A's client connects through a
// minimal TCP proxy in the demo, which forwards the release's EVALSHA to
// Redis (on a fresh server EVALSHA answers NOSCRIPT and go-redis's
// Script.Run sends EVAL, script.go:193-199) and, when the reply of the
// attempt that deleted the key comes back, lets B (a RedisLock on its
// own, direct client) acquire the now free key, then closes A's
// connection instead of forwarding the reply, once. go-redis sees EOF
// and sends that command (the EVAL) again on a new connection: the key
// is B's, delscript answers 0, and ReleaseCtx answers false, nil.
//
// Uses go-zero as its docs show (https://go-zero.dev/docs/tutorials/redis/redis-lock:
// MustNewRedis, NewRedisLock, SetExpire, AcquireCtx, ReleaseCtx); departs
// in nothing. Exit 1 when the release that deleted the key answers false,
// 0 when it answers true, 2 when it could not run; redis-server and the
// proxy are stopped in every case.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/lockcheck/lockcheck/survey/demos/demoredis"
)

func main() { demoredis.Main(15*time.Second, run) }

const key = "lost-reply"

func run(ctx context.Context) (int, error) {
	logx.Disable()
	srv, err := demoredis.StartServer(ctx, "redis")
	if err != nil {
		return 0, err
	}
	direct := redis.MustNewRedis(redis.RedisConf{Host: srv.Addr(), Type: redis.NodeType})
	b := redis.NewRedisLock(direct, key)
	b.SetExpire(5)

	w := &releaseWatch{}
	proxy, err := demoredis.StartProxy(srv.Addr(), w.onCommand(ctx, srv.Addr(), b))
	if err != nil {
		return 0, err
	}
	a := redis.NewRedisLock(redis.MustNewRedis(redis.RedisConf{Host: proxy.Addr(), Type: redis.NodeType}), key)
	a.SetExpire(5)
	if ok, err := a.AcquireCtx(ctx); err != nil || !ok {
		return 0, fmt.Errorf("A's acquire: %v %v", ok, err)
	}
	w.armed.Store(true)
	rctx, cancel := demoredis.Within(ctx, 8*time.Second)
	rel, relErr := a.ReleaseCtx(rctx)
	cancel()
	if e, ok := w.bErr.Load().(error); ok {
		return 0, fmt.Errorf("B's acquire during the release: %w", e)
	}
	if w.dropped.Load() != 1 {
		return 0, fmt.Errorf("the proxy dropped no release reply (release answered %v %v)", rel, relErr)
	}
	return w.report(ctx, srv.Addr(), rel, relErr), nil
}

// releaseWatch is what the proxy saw of A's release (its commands, the dropped reply, B's acquire), for the report.
type releaseWatch struct {
	armed   atomic.Bool
	dropped atomic.Int32
	sentMu  sync.Mutex
	sent    []string
	bGot    atomic.Bool
	bErr    atomic.Value
}

// onCommand is the proxy's hook: it records each release sent and, once armed, asks to drop its reply.
func (w *releaseWatch) onCommand(ctx context.Context, addr string, b *redis.RedisLock) func(args []string) demoredis.Action {
	return func(args []string) demoredis.Action {
		// delscript's EVALSHA (or EVAL) has 5 arguments: sha 1 key id
		if len(args) != 5 || !strings.HasPrefix(strings.ToLower(args[0]), "eval") || args[3] != key {
			return demoredis.Action{}
		}
		w.sentMu.Lock()
		w.sent = append(w.sent, strings.ToUpper(args[0]))
		w.sentMu.Unlock()
		if !w.armed.Load() {
			return demoredis.Action{}
		}
		return demoredis.Action{DropReply: true, Drop: func() bool { return w.dropDeleting(ctx, addr, b) }}
	}
}

// dropDeleting drops only the reply of the attempt that deleted the key, once, letting B acquire first.
func (w *releaseWatch) dropDeleting(ctx context.Context, addr string, b *redis.RedisLock) bool {
	// the first EVALSHA on a fresh server answers NOSCRIPT and
	// go-redis sends EVAL (script.go:193-199): drop only the
	// reply of the attempt that deleted the key
	if gone, err := demoredis.Exists(ctx, addr, key); err != nil || gone {
		return false
	}
	if !w.armed.CompareAndSwap(true, false) {
		return false
	}
	w.dropped.Add(1)
	ok, err := b.AcquireCtx(ctx)
	w.bGot.Store(ok)
	if err != nil {
		w.bErr.Store(err)
	}
	return true
}

// report prints what the release went through and answered, and says whether the resend showed.
func (w *releaseWatch) report(ctx context.Context, addr string, rel bool, relErr error) int {
	holder, _ := demoredis.Do(ctx, addr, "EXISTS", key)
	w.sentMu.Lock()
	seq := strings.Join(w.sent, ", ")
	n := len(w.sent)
	w.sentMu.Unlock()
	fmt.Printf("A's release went to Redis as %s; the reply of the one that deleted the key was lost, and B acquired meanwhile: %v\n", seq, w.bGot.Load())
	fmt.Printf("A's ReleaseCtx answered %v, %v; the key exists (B's): %s\n", rel, relErr, strings.TrimPrefix(holder, ":"))
	if !rel && relErr == nil && n >= 2 {
		fmt.Println("the release deleted the key and answered false: go-redis resent it (go-zero's MaxRetries 3), and the resend found the key gone (go-zero v1.10.3, go-redis v9.23.0)")
		return demoredis.Shown
	}
	fmt.Println("the release answered as it did on Redis: no resend showed")
	return demoredis.NotShown
}
