package golocks_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/survey"
)

// runGoDemo builds the Go demonstration registered as name (survey's
// goDemos: `go run ./demos/<name>` in survey/) into the test's temp dir,
// runs it from survey/, and requires exit 1 (the mechanism showed) and
// marker in its output. Each demo bounds itself (under 20 s) and stops
// what it starts; the deadline here only catches one that does not.
func runGoDemo(t *testing.T, name, marker string, keys ...string) {
	t.Helper()
	testutil.RequireRedis(t)
	i := slices.IndexFunc(survey.Demos, func(d survey.Demo) bool { return d.Name == name })
	if i < 0 {
		t.Fatalf("no demonstration %q in survey.Demos", name)
	}
	d := survey.Demos[i]
	for _, k := range keys {
		if got, ok := survey.DemoFor(k); !ok || got.Name != name {
			t.Fatalf("survey.DemoFor(%q) = %q, %v; want %q", k, got.Name, ok, name)
		}
	}
	if len(d.Cmd) != 3 || d.Cmd[0] != "go" || d.Cmd[1] != "run" || d.Dir != "survey" {
		t.Fatalf("%s: Cmd %q in %q, want go run ./demos/<name> in survey", name, d.Cmd, d.Dir)
	}
	dir := filepath.Join("..", "..", d.Dir)
	bin := filepath.Join(t.TempDir(), name)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, d.Cmd[2])
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", d.Cmd[2], err, out)
	}
	rctx, rcancel := context.WithTimeout(ctx, 90*time.Second)
	defer rcancel()
	cmd := exec.CommandContext(rctx, bin)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), marker) {
		t.Fatalf("%s: %v after %v, output:\n%s\nwant exit 1 and %q", name, err, time.Since(start).Round(time.Millisecond), out, marker)
	}
	t.Logf("%s, exit 1 after %v:\n%s", name, time.Since(start).Round(time.Millisecond), out)
}

// TestGoDemo_GozeroRenew: go-zero's renewal by AcquireCtx takes a free
// key after a release, after an expiry (a success covering another's
// hold), and late after a cut-off.
func TestGoDemo_GozeroRenew(t *testing.T) {
	runGoDemo(t, "gozero-renew", "a renewal by AcquireCtx takes a free key", "go-zero extend", "go-zero cut-off")
}

// TestGoDemo_GozeroResend: a release whose reply is lost is resent by
// go-redis (go-zero's MaxRetries 3) and answers false.
func TestGoDemo_GozeroResend(t *testing.T) {
	runGoDemo(t, "gozero-resend", "the release deleted the key and answered false", "go-zero lost-reply")
}

// TestGoDemo_RueidislockPause: a holder stopped past KeyValidity writes
// with its context alive while another holds.
func TestGoDemo_RueidislockPause(t *testing.T) {
	runGoDemo(t, "rueidislock-pause", "a context with no deadline cannot tell a holder woken past KeyValidity", "rueidislock extend")
}

// TestGoDemo_ValkeylockPause: the same in the fork.
func TestGoDemo_ValkeylockPause(t *testing.T) {
	runGoDemo(t, "valkeylock-pause", "a context with no deadline cannot tell a holder woken past KeyValidity", "valkeylock extend")
}

// TestGoDemo_RueidislockSkew: with Redis's clock ahead by KeyValidity, a
// second client acquires while the first's context is alive (PXAT and
// FallbackSETPX).
func TestGoDemo_RueidislockSkew(t *testing.T) {
	runGoDemo(t, "rueidislock-skew", "a second client acquires while the first's context is alive", "rueidislock skew")
}

// TestGoDemo_ValkeylockSkew: the same in the fork.
func TestGoDemo_ValkeylockSkew(t *testing.T) {
	runGoDemo(t, "valkeylock-skew", "a second client acquires while the first's context is alive", "valkeylock skew")
}

// TestGoDemo_RedsyncBareMajority: a lease on 3 of 5 masters is lost with
// one of them (restarted empty, or its clock jumped) while Until() is
// ahead.
func TestGoDemo_RedsyncBareMajority(t *testing.T) {
	runGoDemo(t, "redsync-bare-majority", "a lease on a bare majority is lost", "redsync kill-quorum", "redsync clock-quorum")
}
