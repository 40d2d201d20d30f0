package cluster_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestSentinel_UpFailoverDown: the sentinel topology comes up with a master
// the sentinels agree on, fails over on request, and leaves no process,
// temp dir or listening proxy behind.
func TestSentinel_UpFailoverDown(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{Topology: cluster.Sentinel, LogDir: t.TempDir(), ClientProxies: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("got %d nodes and %d sentinels, want 3 and 3", len(c.Nodes), len(c.Sentinels))
	}
	failOver(t, c)
	var dirs, proxies []string
	for _, n := range append(append([]*cluster.Node{}, c.Nodes...), c.Sentinels...) {
		dirs = append(dirs, n.Dir())
		for _, p := range []*cluster.Proxy{n.Peer, n.Client} {
			if p != nil {
				proxies = append(proxies, p.Addr)
			}
		}
	}
	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	testutil.NoRedisChildren(t)
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("temp dir %s left behind", d)
		}
	}
	for _, a := range proxies {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			t.Errorf("proxy %s still listening", a)
		}
	}
}

// TestLocal_KillRestart: a node killed with SIGKILL comes back on its
// address; with aof-always it keeps what it acknowledged, without
// persistence it comes back empty (the kill-redis scenarios rest on this).
func TestLocal_KillRestart(t *testing.T) {
	testutil.RequireRedis(t)
	for _, tc := range []struct {
		persistence string
		keeps       bool
	}{{"aof-always", true}, {"none", false}} {
		t.Run(tc.persistence, func(t *testing.T) {
			ctx := context.Background()
			c, err := cluster.Up(ctx, cluster.Config{LogDir: t.TempDir(), Persistence: tc.persistence})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Down()
			n := c.Nodes[0]
			rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password, MaxRetries: -1})
			defer rc.Close()
			if err := rc.Set(ctx, "lock:1", "token", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			pid := n.PID()
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if testutil.Alive(pid) {
				t.Fatalf("pid %d alive after Kill", pid)
			}
			if err := n.Restart(ctx, c.Password); err != nil {
				t.Fatal(err)
			}
			got := rc.Exists(ctx, "lock:1").Val() == 1
			if got != tc.keeps {
				t.Errorf("lock key after kill and restart: present %v, want %v", got, tc.keeps)
			}
		})
	}
}

// TestLeftovers removes the dir of a node that died with its lockcheck and
// keeps the dir of a node that runs, and a lockcheck-* dir that is not a
// node's (no owner file: a user's, or another tool's).
func TestLeftovers(t *testing.T) {
	testutil.RequireRedis(t)
	c, err := cluster.Up(context.Background(), cluster.Config{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	orphan, err := os.MkdirTemp("", cluster.TempPrefix+"n1-")
	if err != nil {
		t.Fatal(err)
	}
	// Its lockcheck is dead: a process that has exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan, "lockcheck.pid"), []byte(strconv.Itoa(dead.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, err := os.MkdirTemp("", cluster.TempPrefix+"n1-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(fresh)
	foreign, err := os.MkdirTemp("", cluster.TempPrefix+"test-tool-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(foreign)
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{orphan, foreign} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := cluster.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("orphan %s not removed (removed %v)", orphan, removed)
	}
	if _, err := os.Stat(c.Nodes[0].Dir()); err != nil {
		t.Errorf("a running node's dir was removed: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a dir made a moment ago (its node may be starting) was removed: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("an old lockcheck-* dir with no owner file (not a node's) was removed: %v", err)
	}
	// A killed node awaiting restart: no process in its dir, but its
	// lockcheck (this test) lives.
	n := c.Nodes[0]
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(n.Dir(), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Leftovers(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(context.Background(), c.Password); err != nil {
		t.Errorf("restart after a sweep: %v (the sweep took a live lockcheck's dir)", err)
	}
}

// failOver kills n1, the master, has Sentinel promote a replica, and
// returns the old master once the sentinels name another.
func failOver(t *testing.T, c *cluster.Cluster) *cluster.Node {
	t.Helper()
	ctx := context.Background()
	m, err := c.Master(ctx)
	if err != nil || m != c.Nodes[0] {
		t.Fatalf("master: got %v, %v; want n1", m, err)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m2, err := c.Master(ctx)
		if err == nil && m2 != m {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica promoted within a minute of the failover (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLocal_RedisConf: --redis-conf settings reach every Redis node, after
// lockcheck's own (so they win), and not the sentinels; a setting that is
// not "name value" is refused before anything starts.
func TestLocal_RedisConf(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{Topology: cluster.Redlock, Nodes: 2, LogDir: t.TempDir(),
		RedisConf: []string{"hz 50", "maxclients 77"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	for _, n := range c.Nodes {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr, Password: c.Password, MaxRetries: -1})
		got, err := rc.ConfigGet(ctx, "*").Result()
		rc.Close()
		if err != nil || got["hz"] != "50" || got["maxclients"] != "77" {
			t.Errorf("%s: hz %q, maxclients %q (%v); want 50 and 77", n.Name, got["hz"], got["maxclients"], err)
		}
	}
	for _, bad := range []string{"appendonly", "--hz 50"} {
		if _, err := (cluster.Config{RedisConf: []string{bad}}).WithDefaults(); err == nil || !strings.Contains(err.Error(), `want "name value"`) {
			t.Errorf("--redis-conf %q: %v, want a refusal", bad, err)
		}
	}
}

// TestUp_ClockSkew: with ClockSkew, the node's TIME reads that far from
// real time from its start, and a key set with PXAT on the clients'
// clock 2 s ahead is already gone on a node 1 h ahead.
func TestUp_ClockSkew(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	c, err := cluster.Up(ctx, cluster.Config{LogDir: t.TempDir(), ClockSkew: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	rc := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr, Password: c.Password, MaxRetries: -1})
	defer rc.Close()
	before := time.Now()
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Bracketed by our clock's reads around the call, however long a
	// busy machine takes to answer.
	if lo, hi := now.Sub(time.Now()), now.Sub(before); hi < 59*time.Minute || lo > 61*time.Minute {
		t.Fatalf("the node's clock is %v to %v from ours, want about 1h", lo, hi)
	}
	if err := rc.Do(ctx, "SET", "k", "v", "PXAT", time.Now().Add(2*time.Second).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.Exists(ctx, "k").Result(); n != 0 {
		t.Errorf("a key set to expire 2 s from now on our clock lives on a node 1 h ahead")
	}
}
