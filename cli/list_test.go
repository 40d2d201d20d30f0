package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestList_Shapes: lockcheck list names each lock's shape, the one its
// entry declares, which is the one the built lock has: a semaphore is a
// Permitter of the run's permits, a read-write lock a ReadWriter, a
// reentrant lock a Reenterer, and every other lock a mutex (each lock that runs on one Redis built on one
// with 3 permits asked).
func TestList_Shapes(t *testing.T) {
	reg := lockimpl.All()
	var out bytes.Buffer
	if err := list(&out, reg); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && (f[1] == "correct" || f[1] == "broken") {
			listed[f[0]] = f[2]
		}
	}
	for name, want := range map[string]string{"setnx": "mutex", "semaphore": "semaphore", "broken-semaphore-check-add": "semaphore",
		"rwlock": "rwlock", "broken-rwlock-readers-ignore-writer": "rwlock", "reentrant": "reentrant", "broken-reentrant-release-deletes": "reentrant"} {
		if listed[name] != want {
			t.Errorf("list: %s's shape %q, want %q", name, listed[name], want)
		}
	}
	c := testutil.StartRedis(t)
	for _, e := range reg.All() {
		if listed[e.Name] != e.ShapeName() {
			t.Errorf("list: %s's shape %q, its entry declares %q", e.Name, listed[e.Name], e.ShapeName())
		}
		if e.Topology != "" || e.Waits {
			continue // not a lock of one Redis
		}
		l, err := e.Factory(lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 4, Permits: 3})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if got := lockimpl.ShapeOfLock(l); got != e.ShapeName() {
			t.Errorf("%s: built with 3 permits asked, its lock is a %s; its entry declares %s", e.Name, got, e.ShapeName())
		}
		lockimpl.Close(l)
	}
}
