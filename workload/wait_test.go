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

// TestWait_ConfigErrors: a --wait out of range, or with --extend-every,
// is refused before anything starts, and a lock that cannot wait is one
// config error line naming it and what to use; a blocking lock builds.
func TestWait_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Wait: -time.Second}, "--wait -1s: want 0 (no blocking acquire) to"},
		{Config{Wait: time.Microsecond}, "--wait 1µs: want at least 1ms"},
		{Config{Wait: 2 * time.Second, ExtendEvery: 300 * time.Millisecond}, "--wait 2s with --extend-every 300ms: a blocking acquire runs without the client-side watchdog; drop one"},
	} {
		if _, err := tc.cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	c := testutil.StartRedis(t)
	env := lockimpl.Env{Addrs: c.Addrs(), Password: c.Password, PoolSize: 2}
	w, err := Config{Wait: 2 * time.Second}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	reg := lockimpl.All()
	for _, tc := range []struct{ lock, want string }{
		{"setnx", "lock setnx cannot wait: --wait 2s needs a blocking lock (setnx-block; lockcheck list), or drop --wait"},
		{"setnx-block", ""},
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
