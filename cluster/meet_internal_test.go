package cluster

import (
	"context"
	"testing"
	"time"
)

// TestRedisCluster_MeetsMissing: a node that lost another from its view
// (here CLUSTER FORGET, which also keeps gossip from bringing it back for
// a minute, as a dropped handshake left it in a fresh-clone CI run) knows
// it again once waitCluster, told of it by meetMissing, meets it again.
func TestRedisCluster_MeetsMissing(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	c, err := Up(ctx, Config{Topology: RedisCluster, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	n, lost := c.Nodes[1], c.Nodes[2]
	a := c.admin(n)
	defer a.Close()
	if err := a.Do(ctx, "cluster", "forget", lost.ID).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.view(ctx, n); v.has(lost.Peer.Addr) {
		t.Fatalf("%s still knows %s after CLUSTER FORGET", n.Name, lost.Name)
	}
	start := time.Now()
	if err := c.waitCluster(ctx, func(v clusterView) bool { return len(v) == len(c.Nodes) }, c.meetMissing(ctx)); err != nil {
		t.Fatalf("%s never knew %s again: %v", n.Name, lost.Name, err)
	}
	if v, _ := c.view(ctx, n); !v.has(lost.Peer.Addr) {
		t.Fatalf("%s does not know %s", n.Name, lost.Name)
	}
	t.Logf("%s knew %s again after %v", n.Name, lost.Name, time.Since(start).Round(time.Millisecond))
}
