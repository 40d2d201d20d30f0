package lockimpl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

const goodSpec = `name = "t"

[acquire]
script = 'return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])'
keys = ["{key}"]
args = ["{token}", "{ttl_ms}"]

[release]
script = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end'
keys = ["{key}"]
args = ["{token}"]

[extend]
script = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end'
keys = ["{key}"]
args = ["{token}", "{ttl_ms}"]
`

func writeSpec(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lock.toml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSpec_Errors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"not toml", strings.Replace(goodSpec, `keys = ["{key}"]`, `keys = ["{key}"`, 1), `lock.toml:6: `},
		{"no release", goodSpec[:strings.Index(goodSpec, "[release]")] + goodSpec[strings.Index(goodSpec, "[extend]"):], "no [release] section"},
		{"unknown placeholder", strings.Replace(goodSpec, `args = ["{token}"]`, `args = ["{tokn}"]`, 1), `lock.toml:11: unknown placeholder {tokn} in [release] args`},
		{"unknown field", strings.Replace(goodSpec, "[extend]\n", "[extend]\nttl = 5\n", 1), `lock.toml:14: unknown field "extend.ttl"`},
		{"bad mode", strings.Replace(goodSpec, "[extend]\n", "[extend]\nmode = \"double\"\n", 1), `lock.toml:14: mode "double" in [extend]`},
		{"fence on release", strings.Replace(goodSpec, "[release]\n", "[release]\nfence = true\n", 1), "fence is an option of [acquire] and [read_acquire] only"},
		{"no name", strings.Replace(goodSpec, `name = "t"`, "", 1), "no name"},
		{"empty script", strings.Replace(goodSpec, `script = 'return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])'`, `script = ""`, 1), "lock.toml:3: [acquire] has no script"},
		{"unknown shape", strings.Replace(goodSpec, `name = "t"`, "name = \"t\"\nshape = \"queue\"", 1), `lock.toml:2: shape "queue"`},
		{"permits in a mutex", strings.Replace(goodSpec, `args = ["{token}", "{ttl_ms}"]`, `args = ["{token}", "{ttl_ms}", "{permits}"]`, 1), `{permits} is a semaphore's: add shape = "semaphore"`},
		{"semaphore without permits", strings.Replace(goodSpec, `name = "t"`, "name = \"t\"\nshape = \"semaphore\"", 1), `lock.toml:4: [acquire] of a semaphore takes {permits}`},
		{"read acquire in a mutex", goodSpec + "\n[read_acquire]\nscript = 'return 1'\n", `[read_acquire] is a read-write lock's`},
		{"writer preference in a mutex", strings.Replace(goodSpec, `name = "t"`, "name = \"t\"\nwriter_preference = true", 1), `lock.toml:2: writer_preference is a read-write lock's`},
		{"rwlock without read acquire", strings.Replace(goodSpec, `name = "t"`, "name = \"t\"\nshape = \"rwlock\"", 1), "no [read_acquire] section"},
		{"access in a mutex", strings.Replace(goodSpec, `args = ["{token}"]`, `args = ["{token}", "{access}"]`, 1), `lock.toml:11: {access} is a read-write lock's`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lockimpl.LoadSpec(writeSpec(t, tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	if _, err := lockimpl.LoadSpec(writeSpec(t, goodSpec)); err != nil {
		t.Fatalf("good spec: %v", err)
	}
}

func TestLoadSpec_Examples(t *testing.T) {
	files, _ := filepath.Glob("../examples/specs/*.toml")
	if len(files) < 6 {
		t.Fatalf("found %d example specs, want at least 6", len(files))
	}
	for _, f := range files {
		if _, err := lockimpl.LoadSpec(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSpec_TTLSeconds(t *testing.T) {
	s, err := lockimpl.LoadSpec(writeSpec(t, strings.Replace(goodSpec, `"PX", ARGV[2]`, `"EX", ARGV[2]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if s.CheckTTL(300*time.Millisecond) != nil {
		t.Fatal("a spec without {ttl_s} must take any TTL")
	}
	s, err = lockimpl.LoadSpec(writeSpec(t, strings.Replace(goodSpec, `args = ["{token}", "{ttl_ms}"]`, `args = ["{token}", "{ttl_s}"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckTTL(1500 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("{ttl_s} with a 1.5s TTL: got %v, want a whole-seconds error", err)
	}
	if err := s.CheckTTL(2 * time.Second); err != nil {
		t.Errorf("{ttl_s} with 2s: %v", err)
	}
}

func specLock(t *testing.T, src string) (lockimpl.Locker, *redis.Client) {
	t.Helper()
	return specLockOn(t, testutil.StartRedis(t), src)
}

func specLockOn(t *testing.T, c *cluster.Cluster, src string) (lockimpl.Locker, *redis.Client) {
	t.Helper()
	s, err := lockimpl.LoadSpec(writeSpec(t, src))
	if err != nil {
		t.Fatal(err)
	}
	return lockOn(t, c, s.Factory, nil)
}

// TestSpec_Replies runs scripts against Redis and checks how each reply
// is read: OK, integers >= 1 and true succeed; nil, false and integers
// <= 0 fail definitely; an error reply is indeterminate; a string is a
// spec error.
func TestSpec_Replies(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartRedis(t)
	l, rc := specLockOn(t, c, goodSpec)
	called := time.Now()
	a, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatalf("acquire (OK reply): %v", err)
	}
	if got := rc.Get(ctx, "k").Val(); got != a.Token {
		t.Fatalf("key holds %q, want the lease's token %q (placeholders)", got, a.Token)
	}
	// At most the TTL, and no less than what our clock says is left of
	// it (to PTTL's millisecond; a loaded machine reads it later than a
	// quiet one).
	if got, left := rc.PTTL(ctx, "k").Val(), time.Second-time.Since(called); got > time.Second || left > 0 && got < left-time.Millisecond {
		t.Errorf("PTTL %v, want 1s ({ttl_ms}) less the %v since the acquire's call at most", got, time.Second-left)
	}
	if _, err := l.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("acquire held key (nil reply): got %v, want ErrNotAcquired", err)
	}
	other := a
	other.Token = "x"
	if err := l.Release(ctx, other); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release foreign (0 reply): got %v, want ErrNotHeld", err)
	}
	called = time.Now()
	if _, err := l.Extend(ctx, a, 5*time.Second); err != nil {
		t.Errorf("extend own (1 reply): %v", err)
	}
	if got, left := rc.PTTL(ctx, "k").Val(), 5*time.Second-time.Since(called); got > 5*time.Second || got < left-time.Millisecond {
		t.Errorf("PTTL after extend %v, want 5s less the %v since the extend's call at most", got, 5*time.Second-left)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Errorf("release own: %v", err)
	}
	// Once the script cache is flushed (a node restarted), EVALSHA falls
	// back to EVAL.
	rc.ScriptFlush(ctx)
	if _, err := l.Acquire(ctx, "k2", time.Second); err != nil {
		t.Errorf("acquire after SCRIPT FLUSH: %v", err)
	}

	for _, tt := range []struct {
		name, script string
		check        func(error) bool
		want         string
	}{
		{"true", "return true", func(e error) bool { return e == nil }, "success"},
		{"integer 3", "return 3", func(e error) bool { return e == nil }, "success"},
		{"false", "return false", func(e error) bool { return errors.Is(e, lockimpl.ErrNotAcquired) }, "ErrNotAcquired"},
		{"integer -1", "return -1", func(e error) bool { return errors.Is(e, lockimpl.ErrNotAcquired) }, "ErrNotAcquired"},
		{"error reply", `return redis.error_reply("BUSY try later")`, func(e error) bool {
			return e != nil && lockimpl.Outcome(e) == "info" && !errors.Is(e, lockimpl.ErrBadLock)
		}, "indeterminate"},
		{"wrong type", `redis.call("set", KEYS[1], "s"); return redis.call("hget", KEYS[1], "f")`, func(e error) bool {
			return errors.Is(e, lockimpl.ErrBadLock) && strings.Contains(e.Error(), "WRONGTYPE")
		}, "ErrBadLock naming WRONGTYPE"},
		{"unknown command", `return redis.call("nosuchcommand", KEYS[1])`, func(e error) bool {
			return errors.Is(e, lockimpl.ErrBadLock) && strings.Contains(e.Error(), "Unknown Redis command")
		}, "ErrBadLock with the reply"},
		{"string", `return "yes"`, func(e error) bool { return errors.Is(e, lockimpl.ErrBadLock) && strings.Contains(e.Error(), `"yes"`) }, "ErrBadLock naming the reply"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(goodSpec, `script = 'return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])'`, "script = '"+tt.script+"'", 1)
			l, _ := specLockOn(t, c, src)
			if _, err := l.Acquire(ctx, "k", time.Second); !tt.check(err) {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestSpec_ScriptThatDoesNotCompile(t *testing.T) {
	c := testutil.StartRedis(t)
	s, err := lockimpl.LoadSpec(writeSpec(t, strings.Replace(goodSpec, `return redis.call("del", KEYS[1]) else`, `return redis.call("del", KEYS[1]) els`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password})
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "[release] script") {
		t.Fatalf("got %v, want ErrBadLock naming [release]", err)
	}
}

// TestSpec_AddExtend checks the additive extend example against Redis:
// the TTL left grows by the extension.
func TestSpec_AddExtend(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile("../examples/specs/add-extend.toml")
	if err != nil {
		t.Fatal(err)
	}
	l, rc := specLock(t, string(src))
	if !lockimpl.ExtendAdds(l) {
		t.Fatal("add-extend.toml: ExtendAdds is false")
	}
	called := time.Now()
	a, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Extend(ctx, a, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The acquire's second and the extend's added: at most 2s, and no
	// less than what our clock says is left of them.
	if got, left := rc.PTTL(ctx, "k").Val(), 2*time.Second-time.Since(called); got > 2*time.Second || left > 0 && got < left-time.Millisecond {
		t.Errorf("PTTL after an additive extend of 1s: %v, want 2s less the %v since the acquire's call at most", got, 2*time.Second-left)
	}
	if b.Deadline() != a.Deadline()+time.Second {
		t.Errorf("lease deadline %v after extend, want %v", b.Deadline(), a.Deadline()+time.Second)
	}
}

// TestSpec_ReachesOut: on an external Redis (a key prefix set) a spec
// whose script calls a server-wide command, or names a key instead of
// taking it from KEYS, is refused before any op, one line naming the call;
// the same scripts with their keys from KEYS are accepted.
func TestSpec_ReachesOut(t *testing.T) {
	c := testutil.StartRedis(t)
	release := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	for _, tc := range []struct{ script, want string }{
		{`redis.call("FLUSHALL"); return 1`, "calls FLUSHALL"},
		{`redis.call("set", "user:1", "x"); return redis.call("del", KEYS[1])`, `SET on key "user:1" by name`},
		{`redis.call("publish", "events", ARGV[1]); return redis.call("del", KEYS[1])`, ""},
	} {
		src := strings.Replace(goodSpec, release, tc.script, 1)
		if src == goodSpec {
			t.Fatal("the release script to replace is not in goodSpec")
		}
		s, err := lockimpl.LoadSpec(writeSpec(t, src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, KeyPrefix: "lockcheck:t:"})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.script, err)
		case tc.want != "" && (!errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want ErrBadLock saying %q", tc.script, err, tc.want)
		}
	}
}

// TestSpec_Semaphore runs examples/specs/semaphore.toml against Redis with
// 3 permits: {permits} reaches the script, three acquires of a key
// succeed and a fourth is refused, a release frees a permit, and a permit
// whose score Redis's clock has passed is neither released nor extended
// and frees its place. The off-by-one variant admits a fourth.
func TestSpec_Semaphore(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartRedis(t)
	sem := func(file string, k int) (lockimpl.Locker, *redis.Client) {
		s, err := lockimpl.LoadSpec("../examples/specs/" + file)
		if err != nil {
			t.Fatal(err)
		}
		return lockOn(t, c, func(env lockimpl.Env) (lockimpl.Locker, error) {
			env.Permits = k
			return s.Factory(env)
		}, nil)
	}
	l, rc := sem("semaphore.toml", 3)
	if got := lockimpl.PermitsOf(l); got != 3 {
		t.Fatalf("PermitsOf: got %d, want 3 (the run's permits)", got)
	}
	var held []lockimpl.Lease
	for i := range 3 {
		le, err := l.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf("acquire %d of 3 permits: %v", i+1, err)
		}
		held = append(held, le)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire a 4th of 3 permits: got %v, want ErrNotAcquired", err)
	}
	if err := l.Release(ctx, held[0]); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := l.Release(ctx, held[0]); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release twice: got %v, want ErrNotHeld", err)
	}
	rc.ZAdd(ctx, "k", redis.Z{Score: 1, Member: held[1].Token})
	if _, err := l.Extend(ctx, held[1], time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend an expired permit: got %v, want ErrNotHeld", err)
	}
	if _, err := l.Extend(ctx, held[2], time.Minute); err != nil {
		t.Errorf("extend a held permit: %v", err)
	}
	for i := range 2 {
		if _, err := l.Acquire(ctx, "k", time.Minute); err != nil {
			t.Fatalf("acquire %d in place of the released and the expired permit: %v", i+1, err)
		}
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("acquire past 3 again: got %v, want ErrNotAcquired", err)
	}
	if got := rc.PTTL(ctx, "k").Val(); got <= 0 || got > time.Minute {
		t.Errorf("PTTL: got %v, want in (0, 1m] (the key lives as long as its last permit)", got)
	}

	b, _ := sem("broken-semaphore-off-by-one.toml", 3)
	for i := range 4 {
		if _, err := b.Acquire(ctx, "b", time.Minute); err != nil {
			t.Fatalf("off-by-one: acquire %d of 3 permits: %v, want it admitted (the mistake)", i+1, err)
		}
	}
	if _, err := b.Acquire(ctx, "b", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("off-by-one: acquire a 5th: got %v, want ErrNotAcquired", err)
	}
}

// TestSpec_ShapeOfRun: a mutex's spec has one permit a key whatever the
// run asks (the workload then refuses --permits K with one line), and a
// semaphore's spec run without --permits has one.
func TestSpec_ShapeOfRun(t *testing.T) {
	c := testutil.StartRedis(t)
	for _, tc := range []struct {
		file    string
		permits int
		want    int
	}{{"setnx.toml", 3, 1}, {"semaphore.toml", 0, 1}, {"semaphore.toml", 5, 5}} {
		s, err := lockimpl.LoadSpec("../examples/specs/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := lockOn(t, c, func(env lockimpl.Env) (lockimpl.Locker, error) {
			env.Permits = tc.permits
			return s.Factory(env)
		}, nil)
		if got := lockimpl.PermitsOf(l); got != tc.want {
			t.Errorf("%s at permits %d: PermitsOf %d, want %d", tc.file, tc.permits, got, tc.want)
		}
	}
}

// TestSpec_RWLock runs examples/specs/rwlock.toml against Redis: it is a
// ReadWriter (a mutex's spec is not) without writer preference (one
// that declares it has it), whose
// Acquire takes the mode its context names; readers share a key, a writer waits for none of them to hold it and then holds
// it alone; release and extend find a lease by {access}, the mode it was
// taken in. The readers-ignore-writer variant lets a reader in beside
// the writer.
func TestSpec_RWLock(t *testing.T) {
	ctx := context.Background()
	c := testutil.StartRedis(t)
	open := func(file string) lockimpl.ReadWriter {
		s, err := lockimpl.LoadSpec("../examples/specs/" + file)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := lockOn(t, c, s.Factory, nil)
		rw, ok := lockimpl.ReadWriterOf(l)
		if !ok {
			t.Fatalf("%s: not a ReadWriter", file)
		}
		return rw
	}
	if l, _ := specLockOn(t, c, goodSpec); func() bool { _, ok := lockimpl.ReadWriterOf(l); return ok }() {
		t.Fatal("a mutex's spec is a ReadWriter")
	}
	rw := open("rwlock.toml")
	l := rw.(lockimpl.Locker)
	if rw.WritersPreferred() {
		t.Error("rwlock.toml: WritersPreferred, want false (it declares none)")
	}
	r1, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Acquire(lockimpl.WithAccess(ctx, history.AccessRead), "k", time.Minute)
	if err != nil {
		t.Fatalf("a second reader (Acquire in the mode its context names): %v", err)
	}
	if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("write while two read: got %v, want ErrNotAcquired", err)
	}
	if _, err := l.Extend(ctx, r1, time.Minute); err != nil {
		t.Errorf("extend a read lease: %v", err)
	}
	for _, r := range []lockimpl.Lease{r1, r2} {
		if err := l.Release(ctx, r); err != nil {
			t.Fatalf("release a read lease: %v", err)
		}
	}
	w, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessWrite)
	if err != nil {
		t.Fatalf("write on a free key: %v", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, history.AccessRead); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("read while a writer holds: got %v, want ErrNotAcquired", err)
	}
	if _, err := rw.AcquireIn(ctx, "k", time.Minute, "shared"); err == nil || lockimpl.Outcome(err) != history.Info {
		t.Errorf("access \"shared\": got %v, want an error that is no refusal", err)
	}
	if _, err := l.Extend(ctx, w, time.Minute); err != nil {
		t.Errorf("extend the write lease: %v", err)
	}
	if err := l.Release(ctx, w); err != nil {
		t.Errorf("release the write lease: %v", err)
	}
	if err := l.Release(ctx, w); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release the write lease twice: got %v, want ErrNotHeld", err)
	}

	src, err := os.ReadFile("../examples/specs/rwlock.toml")
	if err != nil {
		t.Fatal(err)
	}
	pref, err := lockimpl.LoadSpec(writeSpec(t, strings.Replace(string(src), `shape = "rwlock"`, "shape = \"rwlock\"\nwriter_preference = true", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := lockOn(t, c, pref.Factory, nil); !lockimpl.WritersPreferredOf(pl) {
		t.Error("writer_preference = true: WritersPreferred false")
	}

	b := open("broken-rwlock-readers-ignore-writer.toml")
	if _, err := b.AcquireIn(ctx, "b", time.Minute, history.AccessWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireIn(ctx, "b", time.Minute, history.AccessRead); err != nil {
		t.Errorf("readers-ignore-writer: read while a writer holds: %v, want it admitted (the mistake)", err)
	}
}
