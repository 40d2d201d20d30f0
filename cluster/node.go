package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one redis-server (or redis-sentinel), run as a local process or
// in a container; its methods are the same either way.
type Node struct {
	Name    string
	Addr    string
	Version string
	LogPath string
	// Peer is the proxy replicas and sentinels reach the node through
	// (sentinel topology); Client the one clients do (latency fault).
	Peer, Client *Proxy
	// Bus is the proxy other cluster nodes reach its cluster bus through;
	// ID its cluster node id (cluster topology).
	Bus *Proxy
	ID  string
	// Clock shifts the node's wall clock (set when the run has a clock
	// fault; nil otherwise).
	Clock *Clock

	dir     string // its temp dir: working and data dir
	rt      runtime
	once    sync.Once
	stopErr error
}

// runtime is where a node's server runs: a local process (process.go) or
// a container (docker.go).
type runtime interface {
	pause() error
	resume() error
	// kill ends it at once: no shutdown, no final fsync.
	kill() error
	// restart starts a killed one again with its port and its data, and
	// waits for ready.
	restart(ctx context.Context, ready func(context.Context) error) error
	// stop ends it for good, its log kept at logPath.
	stop(logPath string) error
	// abandon kills it without waiting: lockcheck is about to exit.
	abandon()
	pid() int
	// exited is closed when the server exits (nil if it cannot tell).
	exited() <-chan struct{}
}

// Pause stops the server (SIGSTOP, docker pause): it keeps its sockets but
// answers nothing.
func (n *Node) Pause() error { return n.rt.pause() }

// Resume continues a paused server.
func (n *Node) Resume() error { return n.rt.resume() }

// Kill ends the server with SIGKILL and waits for it: no shutdown, no
// final fsync.
func (n *Node) Kill() error { return n.rt.kill() }

// Restart starts a killed node again on its port, with its data dir (and
// so its AOF, if persistence is on), and waits until it answers PING.
func (n *Node) Restart(ctx context.Context, password string) error {
	if err := n.rt.restart(ctx, func(ctx context.Context) error { return n.waitReady(ctx, password) }); err != nil {
		return fmt.Errorf("restart %s: %w", n.Name, err)
	}
	return nil
}

// PID returns the server's process id (on the host).
func (n *Node) PID() int { return n.rt.pid() }

// Dir returns the node's temp dir (its working and data dir).
func (n *Node) Dir() string { return n.dir }

func (n *Node) waitReady(ctx context.Context, password string) error {
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Password: password, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-n.rt.exited():
			return errors.New("redis-server exited at start-up")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING reply in 10s: %v", err)
		}
	}
}

// stop ends the server, waits for it and removes its temp dir.
func (n *Node) stop() error {
	n.once.Do(func() {
		n.stopErr = errors.Join(n.rt.stop(n.LogPath), os.RemoveAll(n.dir))
		n.Clock.close()
		live.Lock()
		delete(live.nodes, n)
		live.Unlock()
	})
	return n.stopErr
}
