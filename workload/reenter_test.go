package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
)

// TestReenter_ConfigErrors: --reenter out of range, or with the
// client-side watchdog, is one line saying what to drop; a lock with no
// re-entry given --reenter is one config error line naming the lock and
// what to use, and a reentrant lock is taken.
func TestReenter_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Reenter: -1}, "--reenter -1: want 0 (no re-entry) to 64"},
		{Config{Reenter: MaxReenter + 1}, "--reenter 65: want 0"},
		{Config{Reenter: 3, ExtendEvery: time.Second}, "--reenter 3 with --extend-every 1s: re-entries run without the client-side watchdog; drop one"},
	} {
		if _, err := tc.cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	c := testutil.StartRedis(t)
	env := lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 2}
	w, err := Config{Reenter: 3}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	reg := lockimpl.All()
	for _, tc := range []struct{ lock, want string }{
		{"setnx", "lock setnx cannot re-enter: --reenter 3 needs a reentrant lock (reentrant; lockcheck list), or drop --reenter"},
		{"reentrant", ""},
	} {
		e, err := reg.Lookup(tc.lock)
		if err != nil {
			t.Fatal(err)
		}
		r := New(w, func() int64 { return 0 }, func(history.Op) {})
		l, err := BuildLock(e.Factory, e.Name, env, r, w, false, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it built", tc.lock, err)
		case tc.want == "":
			lockimpl.Close(l)
		case err == nil || !errors.Is(err, ErrConfig) || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: got %v, want one config error line ending %q", tc.lock, err, tc.want)
		}
	}
}
