// Package testutil holds helpers for lockcheck's tests.
package testutil

import (
	"context"
	"github.com/redis/go-redis/v9"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
)

// RequireRedis skips the test when redis-server is not installed, with the
// reason. CI installs it, so there the tests run.
func RequireRedis(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_REDIS") != "" {
			tb.Fatalf("redis-server is required here (LOCKCHECK_REQUIRE_REDIS is set): %v", err)
		}
		tb.Skipf("redis-server not installed (%s)", cluster.InstallHint)
	}
}

// StartRedis starts a single local Redis node for the test and stops it in
// tb.Cleanup, failing the test if any redis-server it started outlives it.
func StartRedis(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	return StartCluster(tb, cluster.Config{})
}

// StartCluster starts cfg's topology for the test (its logs under the
// test's temp dir) and stops it in tb.Cleanup, as StartRedis does.
func StartCluster(tb testing.TB, cfg cluster.Config) *cluster.Cluster {
	tb.Helper()
	RequireRedis(tb)
	cfg.LogDir = tb.TempDir()
	c, err := cluster.Up(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Down(); err != nil {
			tb.Errorf("stop redis: %v", err)
		}
		NoRedisChildren(tb)
	})
	return c
}

// NoRedisChildren fails the test if this process has a redis-server child
// that is still running (zombies that were reaped do not count).
func NoRedisChildren(tb testing.TB) {
	tb.Helper()
	if pids := RedisChildren(); len(pids) > 0 {
		tb.Errorf("redis-server still running after cleanup: pids %v", pids)
	}
}

// RedisChildren returns the pids of live redis-server processes whose
// parent is this process.
func RedisChildren() []int { return RedisChildrenOf(os.Getpid()) }

// Alive reports whether pid is a running (not zombie) process.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// RedisChildrenOf returns the pids of live redis-server processes whose
// parent is parent.
func RedisChildrenOf(parent int) []int {
	me := parent
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// stat: pid (comm) state ppid ...
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < 0 || s[open+1:close] != "redis-server" {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// RequireDocker skips the test when no Docker engine is reachable, with
// the reason; where LOCKCHECK_REQUIRE_DOCKER is set (CI sets it when
// `docker info` succeeds) it fails instead.
func RequireDocker(tb testing.TB) {
	tb.Helper()
	out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_DOCKER") != "" {
			tb.Fatalf("a Docker engine is required here (LOCKCHECK_REQUIRE_DOCKER is set): %v: %s", err, out)
		}
		tb.Skipf("no Docker engine reachable (docker info: %v): the docker backend's tests need one", err)
	}
}

// DockerLeft returns the containers and networks that lockcheck runs made
// by process pid still have (labels lockcheck.run and lockcheck.pid):
// other test binaries' runs, going on at the same time, are not counted.
func DockerLeft(tb testing.TB, pid int) []string {
	tb.Helper()
	owner := "label=lockcheck.pid=" + strconv.Itoa(pid)
	var left []string
	for _, args := range [][]string{{"ps", "-a", "--filter", "label=lockcheck.run", "--filter", owner, "--format", "{{.Names}}"},
		{"network", "ls", "--filter", "label=lockcheck.run", "--filter", owner, "--format", "{{.Name}}"}} {
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			tb.Fatalf("docker %v: %v", args, err)
		}
		left = append(left, strings.Fields(string(out))...)
	}
	return left
}

// QuietRedis drops go-redis's own log lines (each dial a killed node
// refuses), as the CLI does: the history records what those ops did, and
// thousands of lines would bury a test log. A package's TestMain calls it.
func QuietRedis() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// RedisPy is Debian's Python with redis-py (python3-redis), which
// examples/adapters/redispy runs on. It skips tb without it, and fails it
// then if LOCKCHECK_REQUIRE_PYREDIS is set (make test).
func RedisPy(tb testing.TB) string {
	tb.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_PYREDIS") != "" {
			tb.Fatalf("%s with redis-py is required here (LOCKCHECK_REQUIRE_PYREDIS is set): %v; apt-get install python3-redis", py, err)
		}
		tb.Skipf("%s with redis-py not installed (apt-get install python3-redis)", py)
	}
	return py
}
