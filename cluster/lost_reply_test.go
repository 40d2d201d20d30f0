package cluster_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/testutil"
)

// TestLostReply_Effect: of the replies a real Redis sends, the lost-reply
// toxic counts those that report an effect of their command (a SET NX
// that took the key, a DEL that deleted it) and not a refusal (a null,
// RESP2 and RESP3), a script's 0, an error, nor a reconnecting client's
// handshake (PING, HELLO).
func TestLostReply_Effect(t *testing.T) {
	c := testutil.StartRedis(t)
	conn, err := net.DialTimeout("tcp", c.Nodes[0].Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if reply := roundTrip(t, conn, "AUTH "+c.Password); string(reply) != "+OK\r\n" {
		t.Fatalf("AUTH: %q", reply)
	}
	del := `EVAL "return redis.call('del', KEYS[1])" 1 k`
	for _, step := range []struct {
		cmd    string
		effect bool
	}{
		{"PING", false},
		{"SET k v NX PX 10000", true},
		{"SET k v NX PX 10000", false},
		{del, true},
		{del, false},
		{"NOSUCHCOMMAND", false},
		{"HELLO 3", false},
		{"SET k v NX PX 10000", true},
		{"SET k v NX PX 10000", false},
	} {
		reply := roundTrip(t, conn, step.cmd)
		if got := cluster.Effect(reply); got != step.effect {
			t.Errorf("%s answered %q: Effect = %v, want %v", step.cmd, reply, got, step.effect)
		}
	}
}

// roundTrip sends cmd inline and reads its reply's first chunk.
func roundTrip(t *testing.T, conn net.Conn, cmd string) []byte {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil || !strings.HasSuffix(string(buf[:n]), "\r\n") {
		t.Fatalf("%s: read %q, %v", cmd, buf[:n], err)
	}
	return buf[:n]
}
