package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
)

// TestWithPortRetry: a start whose port another process took is tried
// again on a new one; a missing program is not retried. The port is
// really taken here: a listener holds it when the first redis-server
// binds it.
func TestWithPortRetry(t *testing.T) {
	needServer(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	c := &Cluster{Password: randomPassword(), dialMap: map[string]string{}}
	defer c.Down()
	cfg := Config{LogDir: t.TempDir()}
	tries := 0
	err = c.withPortRetry(context.Background(), func() error {
		tries++
		port := taken
		if tries > 1 {
			if port, err = freePort(); err != nil {
				return err
			}
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--daemonize", "no", "--save", ""}
		_, err := c.startNode(context.Background(), cfg, "redis-server", "", "n1", args, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), c.Password)
		return err
	})
	if err != nil || tries != 2 || len(c.Nodes) != 1 {
		t.Fatalf("withPortRetry: %v after %d tries, %d nodes; want the second try's node up", err, tries, len(c.Nodes))
	}
	tries = 0
	err = c.withPortRetry(context.Background(), func() error { tries++; return ErrNotInstalled })
	if !errors.Is(err, ErrNotInstalled) || tries != 1 {
		t.Errorf("a missing program: %v after %d tries, want ErrNotInstalled at once", err, tries)
	}
}
