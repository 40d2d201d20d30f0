// Package cluster starts and stops Redis topologies for a run.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrNotInstalled means a Redis program lockcheck needs is missing: a user
// mistake, fixed by installing it.
var ErrNotInstalled = errors.New("redis not installed")

// Topologies.
const (
	Single = "single"
)

// Backends.
const (
	Local = "local"
)

// Config says what to start.
type Config struct {
	Topology string // "single" (default)
	Backend  string // "local" (default)
	// MaxClients is Redis's maxclients; 0 means 10000 + 128.
	MaxClients int
	// LogDir receives nodes/<node>/redis.log; required.
	LogDir string
	// RedisServer is the redis-server program; default found on PATH.
	RedisServer string
	// Persistence is "none" (default), "aof-everysec" or "aof-always".
	Persistence string
}

// Cluster is a running topology.
type Cluster struct {
	Password string
	Nodes    []*Node

	downOnce sync.Once
	downErr  error
}

// Up starts the topology in cfg and waits until every node answers PING.
// On error everything started so far is stopped.
func Up(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Topology == "" {
		cfg.Topology = Single
	}
	if cfg.Backend == "" {
		cfg.Backend = Local
	}
	if cfg.Backend != Local {
		return nil, fmt.Errorf("backend %q is not supported yet (use local)", cfg.Backend)
	}
	if cfg.Topology != Single {
		return nil, fmt.Errorf("topology %q is not supported yet (use single)", cfg.Topology)
	}
	if cfg.LogDir == "" {
		return nil, errors.New("cluster: no log dir")
	}
	c := &Cluster{Password: randomPassword()}
	n, err := startLocal(ctx, cfg, "n1", c.Password)
	if err != nil {
		return nil, err
	}
	c.Nodes = append(c.Nodes, n)
	return c, nil
}

// Addrs returns the client addresses of every node.
func (c *Cluster) Addrs() []string {
	var as []string
	for _, n := range c.Nodes {
		as = append(as, n.Addr)
	}
	return as
}

// Down stops every node and removes its temp dir. It is safe to call more
// than once and from a deferred call after a panic.
func (c *Cluster) Down() error {
	c.downOnce.Do(func() {
		var errs []string
		for _, n := range c.Nodes {
			if err := n.stop(); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			c.downErr = fmt.Errorf("cluster down: %s", strings.Join(errs, "; "))
		}
	})
	return c.downErr
}

func randomPassword() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
