package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one redis-server process.
type Node struct {
	Name    string
	Addr    string
	Version string
	LogPath string
	// Peer is the proxy replicas and sentinels reach the node through
	// (sentinel topology); Client the one clients do (latency fault).
	Peer, Client *Proxy

	mu      sync.Mutex // guards cmd and exited across kill/restart
	cmd     *exec.Cmd
	dir     string
	exited  chan struct{}
	stopErr error
	once    sync.Once
	server  string
	args    []string
	logDir  string
	env     []string // extra environment (the clock shim)
	// Clock shifts the node's wall clock (set when the run has a clock
	// fault; nil otherwise).
	Clock *Clock
	// ctr is set when the node runs in a container (docker backend).
	ctr *container
}

// live tracks every node this process started, so that Emergency can end
// them when the process must exit at once (a second Ctrl-C).
var live struct {
	sync.Mutex
	nodes map[*Node]struct{}
}

// Emergency kills every node still running and removes its temp dir,
// without waiting for anything else. For a process about to exit.
func Emergency() {
	live.Lock()
	defer live.Unlock()
	for n := range live.nodes {
		if n.ctr != nil {
			_ = n.ctr.remove("")
		} else if cmd, _ := n.proc(); cmd != nil {
			_ = cmd.Process.Kill()
		}
		_ = os.RemoveAll(n.dir)
	}
}

// InstallHint is the one line a user sees when redis-server is missing.
const InstallHint = "install it with `sudo apt-get install redis-server redis-tools` (or `make deps`), or pass --redis-server PATH"

func findServer(path string) (string, error) {
	if path == "" {
		path = "redis-server"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found: %s", ErrNotInstalled, path, InstallHint)
	}
	return p, nil
}

var versionRE = regexp.MustCompile(`v=([0-9][0-9.]*)`)

// ServerVersion returns the version redis-server reports.
func ServerVersion(path string) (string, error) {
	p, err := findServer(path)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", p, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version: unrecognised output %q", p, out)
	}
	return string(m[1]), nil
}

func persistenceArgs(p string) ([]string, error) {
	switch p {
	case "", "none":
		return []string{"--save", "", "--appendonly", "no"}, nil
	case "aof-everysec":
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}, nil
	case "aof-always":
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}, nil
	}
	return nil, fmt.Errorf("unknown persistence %q (want none, aof-everysec or aof-always)", p)
}

// upSingle starts one redis-server on a free loopback port.
func (c *Cluster) upSingle(ctx context.Context, cfg Config, server, version string, persist []string, maxClients int) error {
	return c.upMaster(ctx, cfg, server, version, "n1", persist, maxClients)
}

// upRedlock starts cfg.Nodes independent masters, n1..nN.
func (c *Cluster) upRedlock(ctx context.Context, cfg Config, server, version string, persist []string, maxClients int) error {
	for i := 1; i <= cfg.Nodes; i++ {
		if err := c.upMaster(ctx, cfg, server, version, "n"+strconv.Itoa(i), persist, maxClients); err != nil {
			return err
		}
	}
	return nil
}

// upMaster starts one stand-alone redis-server on a free loopback port.
func (c *Cluster) upMaster(ctx context.Context, cfg Config, server, version, name string, persist []string, maxClients int) error {
	var lastErr error
	// A port taken between our probe and Redis's bind is retried.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		args := append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--requirepass", c.Password, "--maxclients", strconv.Itoa(maxClients),
			"--daemonize", "no", "--loglevel", "notice",
		}, persist...)
		if _, err := c.startNode(ctx, cfg, server, version, name, args, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), c.Password); err != nil {
			lastErr = err
			if k := len(c.Nodes) - 1; k >= 0 { // the node that did not come up
				_ = c.Nodes[k].stop()
				c.Nodes = c.Nodes[:k]
			}
			if ctx.Err() != nil || errors.Is(err, ErrNotInstalled) {
				return err
			}
			continue
		}
		return nil
	}
	return lastErr
}

// startNode starts a node in a new temp dir and waits for PING.
func (c *Cluster) startNode(ctx context.Context, cfg Config, server, version, name string, args []string, addr, password string) (*Node, error) {
	return c.startNodeIn(ctx, cfg, server, version, name, args, addr, password, "")
}

// startNodeIn is startNode with a dir made by the caller ("": a new one).
// The node is in c.Nodes (or c.Sentinels) as soon as it runs, so Down
// stops it even if it never gets ready.
func (c *Cluster) startNodeIn(ctx context.Context, cfg Config, server, version, name string, args []string, addr, password, dir string) (*Node, error) {
	logDir := filepath.Join(cfg.LogDir, "nodes", name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	shim := ""
	if cfg.ClockShim && name[0] == 'n' {
		shim = cfg.clockShim
	}
	n, err := spawn(server, args, name, logDir, version, dir, shim)
	if err != nil {
		return nil, err
	}
	n.Addr = addr
	return n, c.adopt(ctx, n, password)
}

// adopt adds a started node to the cluster (so Down stops it even if it
// never gets ready) and waits until it answers PING.
func (c *Cluster) adopt(ctx context.Context, n *Node, password string) error {
	if n.Name[0] == 's' {
		c.Sentinels = append(c.Sentinels, n)
	} else {
		c.Nodes = append(c.Nodes, n)
	}
	if err := n.waitReady(ctx, password); err != nil {
		return fmt.Errorf("start %s: %w (see %s)", n.Name, err, n.LogPath)
	}
	return nil
}

// track registers a node for Emergency.
func track(n *Node) {
	live.Lock()
	if live.nodes == nil {
		live.nodes = map[*Node]struct{}{}
	}
	live.nodes[n] = struct{}{}
	live.Unlock()
}

func spawn(server string, args []string, name, logDir, version, dir, shim string) (*Node, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", TempPrefix+name+"-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	// The owner's pid keeps Leftovers away while this lockcheck lives.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	n := &Node{Name: name, Version: version, LogPath: filepath.Join(logDir, "redis.log"), dir: dir,
		server: server, args: args, logDir: logDir}
	if shim != "" {
		clk, err := newClock(filepath.Join(dir, "clock"))
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		n.Clock = clk
		n.env = []string{"LD_PRELOAD=" + shim, ClockShimEnv + "=" + filepath.Join(dir, "clock")}
	}
	if err := n.start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	track(n)
	return n, nil
}

// start runs the process (again, after a kill) with the same port and dir.
func (n *Node) start() error {
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(n.server, append(append([]string{}, n.args...), "--dir", n.dir)...)
	cmd.Dir = n.dir
	if n.env != nil {
		cmd.Env = append(os.Environ(), n.env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Setpgid: a terminal's Ctrl-C reaches lockcheck only, which then
	// stops Redis itself after writing the history. Pdeathsig: if
	// lockcheck dies hard, the kernel kills Redis with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", n.server, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	return nil
}

func (n *Node) proc() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.exited
}

// Pause stops the process (SIGSTOP): it keeps its sockets but answers nothing.
func (n *Node) Pause() error {
	if n.ctr != nil {
		return n.ctr.pause()
	}
	cmd, _ := n.proc()
	return cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process (SIGCONT).
func (n *Node) Resume() error {
	if n.ctr != nil {
		return n.ctr.resume()
	}
	cmd, _ := n.proc()
	return cmd.Process.Signal(syscall.SIGCONT)
}

// Kill ends the process with SIGKILL and waits for it: no shutdown, no
// final fsync.
func (n *Node) Kill() error {
	if n.ctr != nil {
		return n.ctr.kill()
	}
	cmd, exited := n.proc()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

// Restart starts a killed node again on its port, with its data dir (and
// so its AOF, if persistence is on), and waits until it answers PING.
func (n *Node) Restart(ctx context.Context, password string) error {
	if n.ctr != nil {
		// The same container: its port, and its data dir (so its AOF).
		if n.ctr.running() {
			return fmt.Errorf("restart %s: still running", n.Name)
		}
		if err := n.ctr.start(); err != nil {
			return fmt.Errorf("restart %s: %w", n.Name, err)
		}
		return n.waitReady(ctx, password)
	}
	if _, exited := n.proc(); !isClosed(exited) {
		return fmt.Errorf("restart %s: still running", n.Name)
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ { // the port may linger briefly
		if err = n.start(); err != nil {
			return err
		}
		if err = n.waitReady(ctx, password); err == nil {
			return nil
		}
		_ = n.Kill()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restart %s: %w", n.Name, err)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

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
		_, exited := n.proc()
		select {
		case <-exited:
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

// stop ends the process (SIGTERM, then SIGKILL after 3s), waits for it and
// removes its temp dir.
func (n *Node) stop() error {
	n.once.Do(func() {
		if n.ctr != nil {
			n.stopErr = errors.Join(n.ctr.remove(n.LogPath), os.RemoveAll(n.dir))
			n.Clock.close()
			live.Lock()
			delete(live.nodes, n)
			live.Unlock()
			return
		}
		cmd, exited := n.proc()
		_ = cmd.Process.Signal(syscall.SIGCONT) // a paused node cannot act on SIGTERM
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		n.Clock.close()
		n.stopErr = os.RemoveAll(n.dir)
		live.Lock()
		delete(live.nodes, n)
		live.Unlock()
	})
	return n.stopErr
}

// PID returns the node's process id.
func (n *Node) PID() int {
	if n.ctr != nil {
		return n.ctr.pid()
	}
	cmd, _ := n.proc()
	return cmd.Process.Pid
}

// Dir returns the node's temp dir (its working and data dir).
func (n *Node) Dir() string { return n.dir }
