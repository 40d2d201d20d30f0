package cluster_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestDocker_Single: a node in a container, reached on 127.0.0.1, paused,
// killed and restarted through Docker, and nothing left after Down.
func TestDocker_Single(t *testing.T) {
	testutil.RequireDocker(t)
	ctx := context.Background()
	var said []string
	c, err := cluster.Up(ctx, cluster.Config{Backend: cluster.Docker, LogDir: t.TempDir(), Persistence: "aof-always",
		Say: func(s string) { said = append(said, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	t.Logf("notices: %q", said)
	n := c.Nodes[0]
	if !strings.HasPrefix(n.Addr, "127.0.0.1:") || n.Version == "" {
		t.Fatalf("node at %s, version %q: want a published loopback port and a version", n.Addr, n.Version)
	}
	rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password, MaxRetries: -1, ReadTimeout: 300 * time.Millisecond})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Get(ctx, "k").Err(); err == nil {
		t.Error("a paused container answered")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx, c.Password); err != nil {
		t.Fatal(err)
	}
	if v := rc.Get(ctx, "k").Val(); v != "v" {
		t.Errorf("after kill and restart with appendfsync always, k = %q, want v", v)
	}
	// The password is not in the container's arguments (docker inspect
	// shows them to anyone who may talk to the engine).
	ids, err := exec.Command("docker", "ps", "-q", "--filter", "label="+cluster.LabelOwner+"="+strconv.Itoa(os.Getpid())).Output()
	if err != nil || len(strings.Fields(string(ids))) == 0 {
		t.Errorf("docker ps: %v: %q", err, ids)
	}
	for _, id := range strings.Fields(string(ids)) {
		out, err := exec.Command("docker", "inspect", "--format", "{{json .Config.Cmd}} {{json .Args}}", id).CombinedOutput()
		if err != nil || strings.Contains(string(out), c.Password) || !strings.Contains(string(out), "secrets.conf") {
			t.Errorf("container %s arguments %s (%v): want the secrets file, not the password", id, out, err)
		}
	}
	dir, logPath := n.Dir(), n.LogPath
	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	if left := testutil.DockerLeft(t, os.Getpid()); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("node dir %s left behind", dir)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "Ready to accept connections") {
		t.Errorf("node log not copied to %s", logPath)
	}
}

// TestDocker_SentinelFailover: the sentinel topology in containers fails
// over, and clients find the new master through the published ports.
func TestDocker_SentinelFailover(t *testing.T) {
	testutil.RequireDocker(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{Backend: cluster.Docker, Topology: cluster.Sentinel, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Down()
		if left := testutil.DockerLeft(t, os.Getpid()); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}()
	m := failOver(t, c)
	// A client that asks Sentinel finds the new master, through the
	// address map, and writes to it.
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cluster.MasterName, SentinelAddrs: c.SentinelAddrs(),
		Password: c.Password, MaxRetries: -1, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, c.DialAddr(addr))
		}})
	defer fc.Close()
	if err := fc.Set(ctx, "after-failover", 1, 0).Err(); err != nil {
		t.Errorf("write through Sentinel after the failover: %v", err)
	}
	if err := m.Restart(ctx, c.Password); err != nil {
		t.Fatal(err)
	}
}

// TestDocker_Leftovers: lockcheck cleanup removes the containers and
// networks of a lockcheck that died, and keeps those of a live one.
func TestDocker_Leftovers(t *testing.T) {
	testutil.RequireDocker(t)
	c, err := cluster.Up(context.Background(), cluster.Config{Backend: cluster.Docker, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	removed, err := cluster.DockerLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) > 0 {
		t.Fatalf("removed %v of a live run", removed)
	}
	if len(testutil.DockerLeft(t, os.Getpid())) != 2 {
		t.Fatalf("want the run's container and network, got %v", testutil.DockerLeft(t, os.Getpid()))
	}
	// A container of a lockcheck that died (its pid is gone).
	image := strings.TrimSpace(run(t, "docker", "inspect", "--format", "{{.Config.Image}}", testutil.DockerLeft(t, os.Getpid())[0]))
	run(t, "docker", "create", "--label", "lockcheck.run=deadbeef", "--label", "lockcheck.pid=999999999", "--name", "lockcheck-deadbeef-n1", image)
	removed, err = cluster.DockerLeftovers()
	if err != nil || len(removed) != 1 || !strings.Contains(removed[0], "lockcheck-deadbeef-n1") {
		t.Errorf("removed %v (%v), want the dead run's container", removed, err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}
