package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/lockimpl/process"
)

// TestMain lets this test binary be a lock process: with
// LOCKCHECK_TEST_SERVE=NAME it serves the registered lock NAME on its
// stdin and stdout (process.Serve, built from EnvFromProcess), as
// lockcheck serve does, so that the Go side of the protocol is tested
// through a real process.
func TestMain(m *testing.M) {
	if name := os.Getenv("LOCKCHECK_TEST_SERVE"); name != "" {
		os.Exit(serveForTest(name))
	}
	os.Exit(m.Run())
}

func serveForTest(name string) int {
	e, err := lockimpl.All().Lookup(name)
	if err == nil {
		env := process.EnvFromProcess()
		var l lockimpl.Locker
		if l, err = e.Factory(env); err == nil {
			defer lockimpl.Close(l)
			err = process.Serve(l, env.OpTimeout, os.Stdin, os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// served is the lock process of registered lock name, served by this
// test binary (TestMain), one process for every client or one a client.
func served(t *testing.T, name string, perClient bool) lockimpl.Entry {
	t.Helper()
	t.Setenv("LOCKCHECK_TEST_SERVE", name)
	return process.FromCmd(name, os.Args[0]+" -test.run=^$", "single", perClient)
}

// build builds e's lock on Redis c with k permits, closed with the test.
func build(t *testing.T, e lockimpl.Entry, addrs []string, password string, k int) (lockimpl.Locker, error) {
	t.Helper()
	l, err := e.Factory(lockimpl.Env{Addrs: addrs, Password: password, OpTimeout: 5 * time.Second, Permits: k})
	if err == nil {
		t.Cleanup(func() { lockimpl.Close(l) })
	}
	return l, err
}

// TestProcess_Semaphore: the Go semaphore served as a lock process, one
// for every client and one a client, is a semaphore of the run's permits:
// its ping's reply declares the shape, LOCKCHECK_PERMITS gives the lock
// its k, and Redis admits three holders of a key and refuses a fourth
// until one releases. A mutex's process run with --permits 3 is one line
// naming the shape its ping declared.
func TestProcess_Semaphore(t *testing.T) {
	c := testutil.StartRedis(t)
	ctx := lockimpl.WithClient(context.Background(), 0)
	for _, perClient := range []bool{false, true} {
		l, err := build(t, served(t, "semaphore", perClient), c.Addrs(), c.Password, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got := lockimpl.PermitsOf(l); got != 3 {
			t.Fatalf("per client %v: PermitsOf %d, want 3", perClient, got)
		}
		key := fmt.Sprintf("k-%v", perClient)
		var held []lockimpl.Lease
		for i := range 3 {
			le, err := l.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("per client %v: acquire %d of 3: %v", perClient, i+1, err)
			}
			held = append(held, le)
		}
		if _, err := l.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("per client %v: a 4th of 3 permits: got %v, want ErrNotAcquired", perClient, err)
		}
		if err := l.Release(ctx, held[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(ctx, key, time.Minute); err != nil {
			t.Errorf("per client %v: acquire the permit released: %v", perClient, err)
		}
	}
	_, err := build(t, served(t, "setnx", false), c.Addrs(), c.Password, 3)
	if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), `is a mutex (its ping's reply says "shape":"mutex"), not a semaphore: --permits 3`) ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("setnx's process at --permits 3: got %v, want one line saying it is a mutex, not a semaphore", err)
	}
}

// TestProcess_RWLock: the Go read-write lock served as a lock process
// is a lockimpl.ReadWriter (a mutex's process is not), without writer
// preference as it declares, whose Acquire takes the mode its context
// names; each acquire's access reaches it: readers
// share a key, a writer is refused while they hold it.
func TestProcess_RWLock(t *testing.T) {
	c := testutil.StartRedis(t)
	ctx := lockimpl.WithClient(context.Background(), 0)
	for _, perClient := range []bool{false, true} {
		l, err := build(t, served(t, "rwlock", perClient), c.Addrs(), c.Password, 0)
		if err != nil {
			t.Fatal(err)
		}
		rw, ok := lockimpl.ReadWriterOf(l)
		if !ok || rw.WritersPreferred() {
			t.Fatalf("per client %v: ReadWriterOf %v, WritersPreferred %v; want a ReadWriter without writer preference", perClient, ok, ok && rw.WritersPreferred())
		}
		key := fmt.Sprintf("k-%v", perClient)
		if _, err := rw.AcquireIn(ctx, key, time.Minute, history.AccessRead); err != nil {
			t.Fatalf("per client %v: a reader: %v", perClient, err)
		}
		if _, err := l.Acquire(lockimpl.WithAccess(ctx, history.AccessRead), key, time.Minute); err != nil {
			t.Fatalf("per client %v: a second reader (Acquire in the mode its context names): %v", perClient, err)
		}
		if _, err := l.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Errorf("per client %v: write while two read: got %v, want ErrNotAcquired", perClient, err)
		}
	}
	l, err := build(t, served(t, "setnx", false), c.Addrs(), c.Password, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lockimpl.ReadWriterOf(l); ok {
		t.Error("setnx's process is a ReadWriter")
	}
}

// TestProcess_DeclaredShape: what a process declares in its ping's reply
// that the run cannot take is one line before any op; the permits and the
// access mode reach the process in each acquire's request.
func TestProcess_DeclaredShape(t *testing.T) {
	for _, tc := range []struct {
		ping    string
		permits int
		want    string
	}{
		{`{"id":1,"ok":true,"shape":"queue"}`, 0, `replied "shape":"queue" to its ping`},
		{`{"id":1,"ok":true,"shape":"rwlock"}`, 3, `is a rwlock (its ping's reply says "shape":"rwlock"), not a semaphore: --permits 3`},
		{`{"id":1,"ok":true,"shape":"semaphore","max_permits":2}`, 3, `takes at most 2 permits (its ping's reply says "max_permits":2), not --permits 3`},
		{`{"id":1,"ok":true,"max_permits":2}`, 0, `max_permits is a semaphore's`},
		{`{"id":1,"ok":true,"shape":"semaphore","writer_preference":true}`, 0, `writer preference is a read-write lock's`},
	} {
		_, err := process.Start("read ping; echo '"+tc.ping+"'; while read x; do :; done", "single", lockimpl.Env{OpTimeout: 5 * time.Second, Permits: tc.permits})
		if !errors.Is(err, lockimpl.ErrBadLock) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s at permits %d: got %v, want one line saying %q", tc.ping, tc.permits, err, tc.want)
		}
	}
	// Each process names in the token it grants the permits and access
	// its acquire's request carried.
	echo := `read a; t=x; case $a in *'"permits":3'*) t=p3;; esac; case $a in *'"access":"read"'*) t=${t}read;; esac
echo "{\"id\":2,\"ok\":true,\"token\":\"$t\"}"; while read x; do :; done`
	for _, tc := range []struct {
		shape, want string
		permits     int
	}{{"semaphore", "p3", 3}, {"rwlock", "xread", 0}, {"mutex", "x", 0}} {
		e := process.Entry(tc.shape, `read ping; echo '{"id":1,"ok":true,"shape":"`+tc.shape+`"}'`+"\n"+echo, "single")
		l, err := e.Factory(lockimpl.Env{OpTimeout: 5 * time.Second, Permits: tc.permits})
		if err != nil {
			t.Fatal(err)
		}
		var le lockimpl.Lease
		if rw, ok := lockimpl.ReadWriterOf(l); ok {
			le, err = rw.AcquireIn(context.Background(), "k", time.Second, history.AccessRead)
		} else {
			le, err = l.Acquire(context.Background(), "k", time.Second)
		}
		lockimpl.Close(l)
		if err != nil || le.Token != tc.want {
			t.Errorf("%s: acquire got %q, %v; want token %q (what its request carried)", tc.shape, le.Token, err, tc.want)
		}
	}
}

// TestProcess_PingErrorDeclaresNothing: a ping answered with an error (a
// process whose own Redis ping timed out under a stalled Redis) declares
// nothing, and is asked again: the semaphore's process that answers its
// second ping is a semaphore of 3, not the mutex the error's empty reply
// read as. A process that answers every ping with an error (one written
// before the ping existed) still starts, as a mutex, once the retries
// (3 s) are spent.
func TestProcess_PingErrorDeclaresNothing(t *testing.T) {
	l, err := process.Start(`read p; echo '{"id":1,"error":"ping: read timed out"}'; read p; echo '{"id":2,"ok":true,"shape":"semaphore"}'; while read x; do :; done`,
		"single", lockimpl.Env{OpTimeout: 5 * time.Second, Permits: 3})
	if err != nil {
		t.Fatalf("a semaphore whose first ping failed: %v", err)
	}
	if got := lockimpl.PermitsOf(l); got != 3 {
		t.Errorf("PermitsOf %d after a failed first ping, want 3", got)
	}
	lockimpl.Close(l)
	start := time.Now()
	l, err = process.Start(`i=0; while read p; do i=$((i+1)); echo "{\"id\":$i,\"error\":\"unknown op ping\"}"; done`, "single", lockimpl.Env{OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a process that answers every ping with an error: %v", err)
	}
	defer lockimpl.Close(l)
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("started after %v: the failed pings were not asked again", d)
	}
	if got := lockimpl.PermitsOf(l); got != 1 {
		t.Errorf("PermitsOf %d, want 1 (a mutex)", got)
	}
}
