package golocks_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestPhpredis_EvalTimeoutDesyncs: the mechanism behind malkusch's
// pause-redis and stall-quiet breaks (docs/survey.md), alone against a
// redis-server the script starts and stops: after an EVAL whose reply
// timed out while the server was stopped, phpredis (Debian's php-redis)
// keeps the connection, and the next commands read the replies one
// command late (the script exits 1).
func TestPhpredis_EvalTimeoutDesyncs(t *testing.T) {
	testutil.RequireRedis(t)
	out, err := exec.Command("php", filepath.Join("..", "..", "examples", "adapters", "php", "phpredis_desync.php")).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "one command late") {
		t.Fatalf("phpredis_desync.php: %v, output:\n%s\nwant exit 1, the replies one command late", err, out)
	}
	t.Logf("%s", out)
}
