package golocks_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/survey"
)

// TestPyDemo_ToozHeartbeat: the mechanism behind tooz's breaks
// (docs/survey.md), tooz alone against a redis-server the demonstration
// starts and stops (survey/demos/tooz-heartbeat.py, as registered in
// survey's Demos): with redis stopped for longer than lock_timeout, the
// heart's renewal fails and is logged, a second coordinator acquires the
// lock, and the holder was told nothing (the script exits 1); its
// is_still_owner() is printed too.
func TestPyDemo_ToozHeartbeat(t *testing.T) {
	testutil.RequireRedis(t)
	d, ok := survey.DemoFor("tooz pause-redis")
	if !ok || d.Name != "tooz-heartbeat" {
		t.Fatalf("survey.DemoFor(%q) = %+v, %v; want the tooz-heartbeat demonstration", "tooz pause-redis", d, ok)
	}
	if err := exec.Command(d.Cmd[0], "-c", "import tooz, redis").Run(); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_PYREDIS") != "" {
			t.Fatalf("%s with tooz is required here (LOCKCHECK_REQUIRE_PYREDIS is set): %v; apt-get install python3-tooz", d.Cmd[0], err)
		}
		t.Skipf("%s with tooz not installed (apt-get install python3-tooz)", d.Cmd[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Cmd[0], d.Cmd[1:]...)
	cmd.Dir = filepath.Join("..", "..", d.Dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	const marker = "MECHANISM SHOWN: the second coordinator acquired the lock while the first holder was told nothing"
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), marker) {
		t.Fatalf("%s: %v, output:\n%s\nwant exit 1 and %q", strings.Join(d.Cmd, " "), err, out, marker)
	}
	t.Logf("%s", out)
}
