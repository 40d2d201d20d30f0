package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// backend launches a run's servers: each a local process (localBackend)
// or a container on the run's network (dockerBackend). Every topology is
// built once on it (upMasters, upSentinel, upRedisCluster): which
// servers, which proxies, what they announce, what to wait for.
type backend interface {
	// host is the address nodes announce to each other, on which their
	// peer and bus proxies listen: loopback, or the docker network's
	// gateway (the host, as containers see it).
	host() string
	// node starts data node name with the run's settings (launch) and
	// args, on a port of its own, and waits for PING.
	node(ctx context.Context, name string, args []string) (*Node, error)
	// sentinel starts sentinel name from conf (its port and bind added)
	// and waits for PING.
	sentinel(ctx context.Context, name, conf string) (*Node, error)
	// busPort is the port a cluster node's bus listens on, as its
	// --cluster-port says.
	busPort() (int, error)
	// inner is where a proxy on host reaches node n's port (0: its
	// client port).
	inner(n *Node, port int) string
}

// launch is what every data node of a run is started with, whatever its
// topology: the redis-server program and its version (local backend),
// the persistence flags and the client limit.
type launch struct {
	server, version string
	persist         []string
	maxClients      int
}

// args are launch's redis-server settings, after the node's port.
func (l launch) args() []string {
	return append([]string{"--maxclients", strconv.Itoa(l.maxClients), "--daemonize", "no", "--loglevel", "notice"}, l.persist...)
}

// upMasters starts count independent masters, n1..nN (single: one;
// redlock: --nodes).
func (c *Cluster) upMasters(ctx context.Context, b backend, count int) error {
	for i := 1; i <= count; i++ {
		if err := c.withPortRetry(ctx, func() error {
			_, err := b.node(ctx, "n"+strconv.Itoa(i), nil)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// behindProxy puts a proxy named name, listening on host's port, in
// front of target.
func (c *Cluster) behindProxy(name, host string, port int, target string) (*Proxy, error) {
	return c.proxies.newProxyAt(name, net.JoinHostPort(host, strconv.Itoa(port)), target)
}

// freePort returns a free loopback port.
func freePort() (int, error) { return freePortOn("127.0.0.1") }

// freePortOn returns a port free on ip.
func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// localBackend runs each server as a process on loopback.
type localBackend struct {
	c   *Cluster
	cfg Config
	l   launch
}

func (b *localBackend) host() string { return "127.0.0.1" }

func (b *localBackend) node(ctx context.Context, name string, args []string) (*Node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	all := append(append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1"}, b.l.args()...), args...)
	return b.c.startNode(ctx, b.cfg, b.l.server, b.l.version, name, all, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), b.c.Password)
}

func (b *localBackend) sentinel(ctx context.Context, name, conf string) (*Node, error) {
	sentinel := "redis-sentinel"
	if _, err := exec.LookPath(sentinel); err != nil {
		return nil, fmt.Errorf("%w: redis-sentinel not found: install it with `sudo apt-get install redis-sentinel` (or `make deps`)", ErrNotInstalled)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", TempPrefix+name+"-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\n", port)+conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n, err := b.c.startNodeIn(ctx, b.cfg, sentinel, b.l.version, name, []string{path}, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "", dir)
	if err != nil {
		os.RemoveAll(dir)
	}
	return n, err
}

func (b *localBackend) busPort() (int, error) { return freePort() }

func (b *localBackend) inner(n *Node, port int) string {
	if port == 0 {
		return n.Addr
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
