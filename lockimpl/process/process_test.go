package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/lockimpl/process"
)

// pinged is script answering lockcheck's start-up ping (request 1)
// first: its requests are 2, 3, ...
func pinged(script string) string {
	return "read ping; echo '{\"id\":1,\"ok\":true}'\n" + script
}

func startProc(t *testing.T, script string, env lockimpl.Env) *process.Lock {
	t.Helper()
	p, err := process.Start(pinged(script), "single", env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if testutil.Alive(p.PID()) {
			t.Errorf("lock process %d still running after Close", p.PID())
		}
	})
	return p
}

func TestProcess_ExitMidRun(t *testing.T) {
	p := startProc(t, `read line; echo "connection to redis lost" >&2; exit 3`, lockimpl.Env{OpTimeout: 5 * time.Second})
	_, err := p.Acquire(context.Background(), "k", time.Second)
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "connection to redis lost") {
		t.Fatalf("got %v, want ErrBadLock with the exit status and the stderr tail", err)
	}
	if _, err := p.Acquire(context.Background(), "k", time.Second); !errors.Is(err, lockimpl.ErrBadLock) {
		t.Errorf("after the exit: got %v, want ErrBadLock", err)
	}
}

func TestProcess_NotAReply(t *testing.T) {
	p := startProc(t, `read line; echo "hello"; sleep 30`, lockimpl.Env{OpTimeout: 5 * time.Second})
	_, err := p.Acquire(context.Background(), "k", time.Second)
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "not a reply") {
		t.Fatalf("got %v, want ErrBadLock saying the line is not a reply", err)
	}
}

// TestProcess_Replies checks the mapping of replies, out of order, and a
// request that gets none (indeterminate after the op timeout).
func TestProcess_Replies(t *testing.T) {
	// Reads three requests, then answers k2's, k0's, and never k1's: each
	// reply names the id of the request for its key, whatever order they
	// came in (the three are sent at once). The op timeout is a loaded
	// machine's for the two answered.
	script := `read a; read b; read c
idof() { for l in "$a" "$b" "$c"; do case $l in *'"key":"'"$1"'"'*) x=${l#*'"id":'}; echo "${x%%,*}";; esac; done; }
echo "{\"id\":$(idof k2),\"ok\":false}"
echo "{\"id\":$(idof k0),\"ok\":true,\"token\":\"t1\",\"fence\":7}"
while read x; do :; done`
	p := startProc(t, script, lockimpl.Env{OpTimeout: 3 * time.Second})
	ctx := context.Background()
	type res struct {
		l   lockimpl.Lease
		err error
	}
	out := make([]res, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.Acquire(ctx, fmt.Sprintf("k%d", i), time.Second)
			out[i] = res{l, err}
		}()
	}
	wg.Wait()
	if out[0].err != nil || out[0].l.Token != "t1" || out[0].l.Fence != 7 {
		t.Errorf("k0: got %+v, want token t1 fence 7", out[0])
	}
	if lockimpl.Outcome(out[1].err) != history.Info || !strings.Contains(out[1].err.Error(), "no reply within") {
		t.Errorf("k1: got %v, want indeterminate (no reply within the op timeout)", out[1].err)
	}
	if !errors.Is(out[2].err, lockimpl.ErrNotAcquired) {
		t.Errorf("k2: got %v, want ErrNotAcquired", out[2].err)
	}
}

// TestProcess_Example runs examples/lockproc against Redis.
func TestProcess_Example(t *testing.T) {
	c := testutil.StartRedis(t)
	bin := filepath.Join(t.TempDir(), "lockproc")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/lockproc").CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	p := startProc(t, bin, lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, OpTimeout: 2 * time.Second})
	ctx := context.Background()
	a, err := p.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("acquire held: got %v, want ErrNotAcquired", err)
	}
	other := a
	other.Token = "someone-else"
	if err := p.Release(ctx, other); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("release foreign: got %v, want ErrNotHeld", err)
	}
	if _, err := p.Extend(ctx, a, time.Second); err != nil {
		t.Errorf("extend own: %v", err)
	}
	if err := p.Release(ctx, a); err != nil {
		t.Errorf("release own: %v", err)
	}
	// Many in flight at once: exactly one of 100 concurrent acquires wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Acquire(ctx, "hot", 5*time.Second); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Errorf("concurrent acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d of 100 concurrent acquires won, want 1", wins)
	}
}

// TestProcess_Events: an extend the process makes on its own is recorded
// under the client holding the lease, with its call taken before lockcheck
// acknowledged it and its return when the outcome came; an outcome never
// announced breaks the protocol.
func TestProcess_Events(t *testing.T) {
	script := `read a
echo '{"id":2,"ok":true,"token":"t1"}'
echo '{"event":"extend","seq":1,"key":"k","token":"t1","ttl_ms":300}'
read ack
case "$ack" in *'"ack":1'*) echo '{"event":"extended","seq":1,"ok":true}';; *) echo '{"event":"extended","seq":1,"error":"no ack"}';; esac
read b
echo '{"event":"extended","seq":9,"ok":true}'
sleep 30`
	var mu sync.Mutex
	var ops []history.Op
	env := lockimpl.Env{OpTimeout: 2 * time.Second, Record: func(op history.Op) { mu.Lock(); ops = append(ops, op); mu.Unlock() }}
	p := startProc(t, script, env)
	ctx := lockimpl.WithClient(context.Background(), 4)
	if _, err := p.Acquire(ctx, "k", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // the extend's outcome recorded, or 30 s
	for {
		mu.Lock()
		n := len(ops)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(ops) != 1 || ops[0].F != history.Extend || ops[0].Type != history.OK || ops[0].Process != 4 || ops[0].Token != "t1" ||
		ops[0].TTLms != 300 || ops[0].Return < ops[0].Call {
		t.Errorf("recorded %+v, want one ok extend of t1 by client 4, ttl 300, call <= return", ops)
	}
	mu.Unlock()
	_, err := p.Acquire(ctx, "k", time.Second)
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "never announced") {
		t.Errorf("got %v, want ErrBadLock: an extend reported but never announced", err)
	}
}

// TestProcess_Breaches: a lock process that breaks the protocol stops the
// run (ErrBadLock) with one line naming the breach, at the request it
// breaks on, instead of leaving lockcheck deaf to every later reply (each
// would time out as indeterminate: a valid-looking history).
func TestProcess_Breaches(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"line over 1 MB", `read line; head -c 2000000 /dev/zero | tr '\0' 'x'; echo; sleep 30`, "longer than"},
		{"stdout closed, still running", `read line; exec 1>&-; sleep 30`, "closed its stdout but kept running"},
		{"not UTF-8", `read line; printf '{"id":2,"ok":true,"token":"\377"}\n'; sleep 30`, "not UTF-8"},
		{"id never sent", `read line; echo '{"id":99,"ok":true,"token":"t"}'; sleep 30`, "never sent"},
		{"two replies to one id", `read line; echo '{"id":2,"ok":false}'; echo '{"id":2,"ok":false}'; read line; sleep 30`, "replied twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProc(t, tc.script, lockimpl.Env{OpTimeout: 3 * time.Second})
			var err error
			for range 2 { // the breach may come after the first reply
				if _, err = p.Acquire(context.Background(), "k", time.Second); errors.Is(err, lockimpl.ErrBadLock) {
					break
				}
			}
			if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "within the op timeout") {
				t.Fatalf("got %v, want ErrBadLock saying %q", err, tc.want)
			}
		})
	}
}

// TestProcess_UnreportedExtend: an extend the process announced (and
// lockcheck acknowledged) but never reported is in the history when the
// lock closes, as indeterminate: it was sent, and may have taken effect.
func TestProcess_UnreportedExtend(t *testing.T) {
	acked := filepath.Join(t.TempDir(), "acked")
	script := `read a
echo '{"id":2,"ok":true,"token":"t1"}'
echo '{"event":"extend","seq":1,"key":"k","token":"t1","ttl_ms":300}'
read ack; touch ` + acked + `
while read x; do :; done`
	var mu sync.Mutex
	var ops []history.Op
	env := lockimpl.Env{OpTimeout: 2 * time.Second, Now: func() int64 { return time.Now().UnixNano() },
		Record: func(op history.Op) { mu.Lock(); ops = append(ops, op); mu.Unlock() }}
	p, err := process.Start(pinged(script), "single", env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(lockimpl.WithClient(context.Background(), 2), "k", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !fileExists(acked); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the announced extend was never acknowledged")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Then the lease, still held, released as the process exits (info).
	if len(ops) != 2 || ops[0].F != history.Extend || ops[0].Type != history.Info || ops[0].Token != "t1" || ops[0].Process != 2 || ops[0].Return < ops[0].Call ||
		ops[1].F != history.Release || ops[1].Token != "t1" {
		t.Fatalf("recorded %+v, want one info extend of t1 by client 2, then t1's release at the exit", ops)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestProcess_DoesNotRead: a process that never reads its stdin fills the
// pipe; the next write waits at most the op timeout, then the process is
// killed and every request ends, with the breach named, instead of
// blocking lockcheck (and the run's end, and Ctrl-C) for ever.
func TestProcess_DoesNotRead(t *testing.T) {
	p := startProc(t, `sleep 60`, lockimpl.Env{OpTimeout: 300 * time.Millisecond})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var breaches int
	start := time.Now()
	for range 2000 { // ~80 bytes each: more than a pipe holds
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Acquire(context.Background(), strings.Repeat("k", 40), time.Second)
			if errors.Is(err, lockimpl.ErrBadLock) && strings.Contains(err.Error(), "does not read its stdin") {
				mu.Lock()
				breaches++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Every request back (wg.Wait) at the one op timeout the full pipe
	// took, not an op timeout each (2000 x 300 ms = 10 min): 2 min holds
	// a loaded machine's 2000 goroutines.
	if breaches == 0 || time.Since(start) > 2*time.Minute {
		t.Fatalf("%d requests saw the breach, after %v; want some, and every request back within 2 min", breaches, time.Since(start))
	}
}

// TestProcess_SlowStart: a process that takes 2 s to start is waited for
// before its first request (its start-up is charged to no op), and one
// that never answers the start-up ping is refused with one line saying so.
func TestProcess_SlowStart(t *testing.T) {
	start := time.Now()
	p, err := process.Start("sleep 2\n"+pinged(`read a; echo '{"id":2,"ok":true,"token":"t1"}'; while read x; do :; done`),
		"single", lockimpl.Env{OpTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if waited := time.Since(start); waited < 2*time.Second {
		t.Errorf("StartProcess returned after %v, before the process could answer", waited)
	}
	if l, err := p.Acquire(context.Background(), "k", time.Second); err != nil || l.Token != "t1" {
		t.Errorf("first acquire after a slow start: %+v %v, want token t1 within the op timeout", l, err)
	}
	var said []string
	var mu sync.Mutex
	say := func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() }
	_, err = process.Start(`while read x; do :; done`, "single", lockimpl.Env{StartTimeout: process.SlowStart + 1500*time.Millisecond, Say: say})
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), `did not answer {"id":1,"op":"ping"} within 4.5s`) {
		t.Errorf("a process that never answers: got %v, want ErrBadLock naming the ping", err)
	}
	// While it waits, one line says for what.
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], `waiting for lock process`) || !strings.Contains(said[0], `{"id":N,"ok":true}`) {
		t.Errorf("said %q while waiting; want one line naming the ping and its reply", said)
	}
}

// TestProcess_LateReply: an acquire given up on at the op timeout (2 s;
// its reply comes once it was) is
// recorded, when its reply comes, with what the reply says: ok, the
// token the process chose, the reply's arrival as its return. The
// process's own extends of that lease are its client's, and lockcheck
// gives the lease back (a release recorded under that client). A request
// whose reply never comes is recorded as it was when the lock closes.
func TestProcess_LateReply(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late")
	script := `read a; ` + untilExists(late) + `
echo '{"id":2,"ok":true,"token":"real","fence":3}'
echo '{"event":"extend","seq":1,"key":"k","token":"real","ttl_ms":1000}'
read x; read y
echo '{"event":"extended","seq":1,"ok":true}'
case "$x$y" in *'"op":"release"'*'"token":"real"'*) echo '{"id":3,"ok":true}';; *) echo "unexpected: $x $y" >&2;; esac
read b
while read x; do :; done`
	p, rec := lateProc(t, script)
	mu, record := &rec.mu, rec.record
	ctx := lockimpl.WithClient(context.Background(), 5)
	for i, want := range []string{"real", "never"} {
		call := time.Now().UnixNano()
		_, err := p.Acquire(ctx, "k", time.Second)
		if lockimpl.Outcome(err) != history.Info {
			t.Fatalf("acquire %d: got %v, want indeterminate at the op timeout", i, err)
		}
		lockimpl.Record(record, history.Op{Process: 5, F: history.Acquire, Key: "k", Token: "unknown-" + want, TTLms: 1000,
			Call: call, Return: time.Now().UnixNano()}, err)
		if i == 0 {
			touch(t, late) // the reply comes now, after the op timeout
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(rec.ops) == 3 })
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	ops := rec.ops
	if len(ops) != 4 {
		t.Fatalf("recorded %d ops, want 4 (late acquire, its extend, its release, the unanswered acquire): %+v", len(ops), ops)
	}
	acq, ext, rel, never := ops[0], ops[1], ops[2], ops[3]
	if acq.F != history.Acquire || acq.Type != history.OK || acq.Token != "real" || acq.Fence != 3 || acq.Process != 5 ||
		acq.Return-acq.Call < int64(500*time.Millisecond) || acq.Error != "" {
		t.Errorf("late acquire recorded as %+v, want ok, token real, fence 3, client 5, returning at the reply", acq)
	}
	if ext.F != history.Extend || ext.Process != 5 || ext.Token != "real" || ext.Type != history.OK {
		t.Errorf("the process's extend recorded as %+v, want client 5's ok extend of real", ext)
	}
	if rel.F != history.Release || rel.Process != 5 || rel.Token != "real" || rel.Type != history.OK {
		t.Errorf("the give-back recorded as %+v, want client 5's ok release of real", rel)
	}
	if never.F != history.Acquire || never.Type != history.Info || never.Token != "unknown-never" {
		t.Errorf("the unanswered acquire recorded as %+v, want it as it was (info, its made-up token)", never)
	}
}

// TestProcess_LateUndone: an acquire given up on at the op timeout whose
// reply, when it comes, says undone is not recorded at all: it did not
// happen, as an undone reply in time is not. The process then refuses
// every acquire at once: the first refusal that comes in time comes
// after the undone reply, which has then been taken.
func TestProcess_LateUndone(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late")
	script := `read a; ` + untilExists(late) + `
echo '{"id":2,"undone":true}'
while read x; do echo "{\"id\":$(printf '%s' "$x" | sed 's/.*"id":\([0-9]*\).*/\1/'),\"ok\":false}"; done`
	p, rec := lateProc(t, script)
	ctx := lockimpl.WithClient(context.Background(), 5)
	call := time.Now().UnixNano()
	_, err := p.Acquire(ctx, "k", time.Second)
	if lockimpl.Outcome(err) != history.Info {
		t.Fatalf("acquire: got %v, want indeterminate at the op timeout", err)
	}
	lockimpl.Record(rec.record, history.Op{Process: 5, F: history.Acquire, Key: "k", Token: "unknown-1", TTLms: 1000,
		Call: call, Return: time.Now().UnixNano()}, err)
	touch(t, late) // the undone reply comes now, after the op timeout
	waitFor(t, func() bool {
		_, err := p.Acquire(ctx, "k", time.Second)
		return errors.Is(err, lockimpl.ErrNotAcquired)
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ops) != 0 {
		t.Errorf("recorded %+v, want nothing for an attempt undone", rec.ops)
	}
}

// TestProcess_LeftHeldAtClose: a lease the process granted and no
// release was asked of (one its client held at the end, one granted
// late after Close began, which lockcheck no longer gives back) is
// recorded released with an unknown outcome from when its stdin closed:
// the program may release it as it exits. A lease released before gets
// nothing more.
func TestProcess_LeftHeldAtClose(t *testing.T) {
	script := `read a; echo '{"id":2,"ok":true,"token":"held"}'
read b; echo '{"id":3,"ok":true,"token":"gone"}'
read c; echo '{"id":4,"ok":true}'
read d; while read x; do :; done
echo '{"id":5,"ok":true,"token":"late"}'`
	p, rec := lateProc(t, script)
	ctx := lockimpl.WithClient(context.Background(), 5)
	held, err := p.Acquire(ctx, "k1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := p.Acquire(ctx, "k2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx, gone); err != nil {
		t.Fatal(err)
	}
	call := time.Now().UnixNano()
	_, err = p.Acquire(lockimpl.WithClient(context.Background(), 7), "k3", time.Second)
	if lockimpl.Outcome(err) != history.Info {
		t.Fatalf("acquire: got %v, want indeterminate at the op timeout", err)
	}
	lockimpl.Record(rec.record, history.Op{Process: 7, F: history.Acquire, Key: "k3", Token: "unknown", TTLms: 1000,
		Call: call, Return: time.Now().UnixNano()}, err)
	closed := time.Now().UnixNano()
	if err := p.Close(); err != nil { // the late grant comes while it waits for the exit
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var releases []history.Op
	for _, op := range rec.ops {
		if op.F == history.Release {
			releases = append(releases, op)
		}
	}
	want := map[string]history.Op{"held": {Process: 5, Key: held.Key}, "late": {Process: 7, Key: "k3"}}
	if len(releases) != len(want) {
		t.Fatalf("recorded releases %+v, want one for each of held and late", releases)
	}
	for _, r := range releases {
		w, ok := want[r.Token]
		if !ok || r.Type != history.Info || r.Process != w.Process || r.Key != w.Key || r.Call < closed || r.Return < r.Call ||
			!strings.Contains(r.Error, "its exit may release it") {
			t.Errorf("recorded %+v, want an indeterminate release of %q (client %d, key %s) called when stdin closed", r, r.Token, w.Process, w.Key)
		}
	}
}

// recorded are the ops a lock process recorded.
type recorded struct {
	mu  sync.Mutex
	ops []history.Op
}

func (r *recorded) record(op history.Op) { r.mu.Lock(); r.ops = append(r.ops, op); r.mu.Unlock() }

// lateProc starts script as a lock process whose op timeout is 2 s (a
// reply in time is one a loaded machine gives in time; a late one comes
// after an event of the test's, untilExists), its ops recorded.
func lateProc(t *testing.T, script string) (*process.Lock, *recorded) {
	t.Helper()
	rec := &recorded{}
	env := lockimpl.Env{OpTimeout: 2 * time.Second, Now: func() int64 { return time.Now().UnixNano() }, Record: rec.record}
	p, err := process.Start(pinged(script), "single", env)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// untilExists is a shell line waiting until path exists: a reply held
// back until the test says, not for a time.
func untilExists(path string) string {
	return "while [ ! -e '" + path + "' ]; do sleep 0.02; done"
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// TestProcess_Scope: a process whose ping reply says its leases are
// scopes is Scoped (and one that says its TTLs are rounded has them
// recorded so); its leases carry a Watch with no deadline, lost when
// it writes a lost event for that token and not before; a process that
// says nothing is not Scoped.
func TestProcess_Scope(t *testing.T) {
	script := `read ping
echo '{"id":1,"ok":true,"scope":"a context, not a deadline","ttl_round_ms":1000,"ttl_add_ms":500}'
read a
echo '{"id":2,"ok":true,"token":"t1"}'
read b
echo '{"id":3,"ok":true,"token":"t2"}'
read go
echo '{"event":"lost","key":"k","token":"t1"}'
sleep 30`
	p, err := process.Start(script, "single", lockimpl.Env{OpTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := lockimpl.ScopeOf(p); got != "a context, not a deadline" {
		t.Fatalf("ScopeOf = %q", got)
	}
	if got := lockimpl.KeyTTL(p, 600*time.Millisecond); got != 1500*time.Millisecond {
		t.Errorf("KeyTTL(600ms) = %v, want 1.5s: the ping said ttl_round_ms 1000, ttl_add_ms 500", got)
	}
	ctx := lockimpl.WithClient(context.Background(), 1)
	l1, err1 := p.Acquire(ctx, "k", time.Second)
	l2, err2 := p.Acquire(ctx, "k2", time.Second)
	if err1 != nil || err2 != nil || l1.Watch == nil || l2.Watch == nil {
		t.Fatalf("acquires: %v %v, watches %v %v", err1, err2, l1.Watch, l2.Watch)
	}
	if l1.Deadline() < time.Duration(history.MaxTime)/2 {
		t.Errorf("a scoped lease has deadline %v, want none (far away)", l1.Deadline())
	}
	select {
	case <-l1.Watch.Lost():
		t.Fatal("lost before the process said so")
	case <-time.After(100 * time.Millisecond):
	}
	// Any request: the script then writes the lost event.
	go func() { _, _ = p.Acquire(ctx, "k3", time.Second) }()
	select {
	case <-l1.Watch.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost event did not reach the lease")
	}
	select {
	case <-l2.Watch.Lost():
		t.Fatal("another lease was lost with it")
	default:
	}
	plain := startProc(t, "sleep 30", lockimpl.Env{OpTimeout: 2 * time.Second})
	if got, ttl := lockimpl.ScopeOf(plain), lockimpl.KeyTTL(plain, 600*time.Millisecond); got != "" || ttl != 600*time.Millisecond {
		t.Errorf("a process that says nothing: ScopeOf = %q, KeyTTL(600ms) = %v", got, ttl)
	}
}

// TestProcess_Undone: an acquire's reply that says the attempt reached
// no majority either way is lockimpl.ErrUndone (counted, not recorded,
// no holder implied); on a release it is a breach of the protocol.
func TestProcess_Undone(t *testing.T) {
	p := startProc(t, `read a
echo '{"id":2,"undone":true}'
read b
echo '{"id":3,"undone":true}'
sleep 30`, lockimpl.Env{OpTimeout: 2 * time.Second})
	ctx := lockimpl.WithClient(context.Background(), 1)
	if _, err := p.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrUndone) {
		t.Errorf("acquire: got %v, want ErrUndone", err)
	}
	err := p.Release(ctx, lockimpl.Lease{Key: "k", Token: "t"})
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), "undone") {
		t.Errorf("release: got %v, want ErrBadLock naming undone", err)
	}
}

// TestProcess_NotSent: a reply that says the request never reached Redis
// is lockimpl.ErrNotSent (counted, not recorded), not indeterminate.
func TestProcess_NotSent(t *testing.T) {
	p := startProc(t, `read a
echo '{"id":2,"not_sent":true,"error":"breaker is open"}'
sleep 30`, lockimpl.Env{OpTimeout: 2 * time.Second})
	_, err := p.Acquire(lockimpl.WithClient(context.Background(), 1), "k", time.Second)
	if !errors.Is(err, lockimpl.ErrNotSent) || !strings.Contains(err.Error(), "breaker is open") {
		t.Errorf("got %v, want ErrNotSent with the process's error", err)
	}
}

// TestProcess_AcquireWaitsTTL: a process whose ping says its acquires wait
// up to their TTL for a taken key (acquire_waits_ttl, rounded as
// ttl_round_ms says) is waited for that long more than the op timeout:
// its refusal 1.2 s after the call, of a 600 ms TTL rounded to 2 s, is a
// refusal, where a process that does not say so is indeterminate at the
// op timeout.
func TestProcess_AcquireWaitsTTL(t *testing.T) {
	script := func(ping string) string {
		return "read ping\necho '" + ping + "'\nread a; sleep 1.2\necho '{\"id\":2,\"ok\":false}'\nwhile read x; do :; done"
	}
	ctx := lockimpl.WithClient(context.Background(), 1)
	for _, c := range []struct {
		ping string
		want history.Type
	}{
		{`{"id":1,"ok":true,"ttl_round_ms":1000,"acquire_waits_ttl":true}`, history.Fail},
		{`{"id":1,"ok":true,"ttl_round_ms":1000}`, history.Info},
	} {
		p, err := process.Start(script(c.ping), "single", lockimpl.Env{OpTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Acquire(ctx, "k", 600*time.Millisecond)
		if got := lockimpl.Outcome(err); got != c.want {
			t.Errorf("ping %s: acquire answered after 1.2 s is %v (%v), want %v", c.ping, got, err, c.want)
		}
		_ = p.Close()
	}
}

// TestProcess_Answered: a reply that says its call returned without its
// outcome ("answered") is recorded indeterminate and answered (no info
// horizon); one with an error alone is indeterminate and may still land.
func TestProcess_Answered(t *testing.T) {
	ctx := lockimpl.WithClient(context.Background(), 1)
	for _, c := range []struct {
		reply    string
		answered bool
	}{
		{`{"id":2,"error":"release() reports no outcome","answered":true}`, true},
		{`{"id":2,"error":"i/o timeout"}`, false},
	} {
		p := startProc(t, "read a\necho '"+c.reply+"'\nsleep 30", lockimpl.Env{OpTimeout: 2 * time.Second})
		err := p.Release(ctx, lockimpl.Lease{Key: "k", Token: "t"})
		var got history.Op
		lockimpl.Record(func(op history.Op) { got = op }, history.Op{F: history.Release, Key: "k", Token: "t"}, err)
		if got.Type != history.Info || got.Answered != c.answered || errors.Is(err, lockimpl.ErrNoOutcome) != c.answered {
			t.Errorf("reply %s: recorded %s answered=%v (%v), want info answered=%v", c.reply, got.Type, got.Answered, err, c.answered)
		}
	}
}
