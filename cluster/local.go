package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

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
		n.rt.abandon()
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

// withPortRetry runs start until it succeeds, at most 5 times: a port
// another process took between our probe and the server's bind makes the
// server exit at start-up (tests and runs beside each other probe ports
// at once), and another port is tried. What a failed start added to
// c.Nodes or c.Sentinels is stopped and removed.
func (c *Cluster) withPortRetry(ctx context.Context, start func() error) error {
	var err error
	for range 5 {
		nodes, sentinels := len(c.Nodes), len(c.Sentinels)
		if err = start(); err == nil {
			return nil
		}
		for _, n := range append(c.Nodes[nodes:], c.Sentinels[sentinels:]...) {
			_ = n.stop()
			n.stopProxies()
		}
		c.Nodes, c.Sentinels = c.Nodes[:nodes], c.Sentinels[:sentinels]
		if ctx.Err() != nil || errors.Is(err, ErrNotInstalled) {
			return err
		}
	}
	return err
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
	secrets := ""
	if name[0] == 'n' {
		conf, _ := confArgs(cfg.RedisConf) // checked by WithDefaults
		args = append(slices.Clone(args), conf...)
		// The password goes in on stdin, not in argv, where ps shows it
		// until Redis rewrites its title.
		secrets = fmt.Sprintf("requirepass %s\nmasterauth %s\n", password, password)
	}
	n, err := spawn(server, args, name, logDir, version, dir, shim, secrets)
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

func spawn(server string, args []string, name, logDir, version, dir, shim, secrets string) (*Node, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", TempPrefix+name+"-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if secrets != "" {
		// "-" first: redis-server reads config from its stdin, then the
		// options. No config file: CONFIG REWRITE (Sentinel sends it)
		// still has nothing to rewrite.
		args = append([]string{"-"}, args...)
	}
	// The owner's pid keeps Leftovers away while this lockcheck lives.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	n := &Node{Name: name, Version: version, LogPath: filepath.Join(logDir, "redis.log"), dir: dir}
	p := &process{server: server, args: args, dir: dir, logPath: n.LogPath, stdin: secrets}
	if shim != "" {
		clk, err := newClock(filepath.Join(dir, "clock"))
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		n.Clock = clk
		p.env = []string{"LD_PRELOAD=" + shim, ClockShimEnv + "=" + filepath.Join(dir, "clock")}
	}
	n.rt = p
	if err := p.start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	track(n)
	return n, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
