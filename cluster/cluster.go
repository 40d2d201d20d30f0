// Package cluster starts and stops Redis topologies for a run.
package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrNotInstalled means a Redis program lockcheck needs is missing: a user
// mistake, fixed by installing it.
var ErrNotInstalled = errors.New("redis not installed")

// Topologies.
const (
	Single   = "single"
	Sentinel = "sentinel"
	// Redlock is N independent masters (Config.Nodes), for Redlock.
	Redlock = "redlock"
	// RedisCluster is Redis Cluster: Config.Nodes masters with a replica
	// each, clients through go-redis's cluster client.
	RedisCluster = "cluster"
)

// DefaultRedlockNodes is the node count of the redlock topology.
const DefaultRedlockNodes = 5

// Backends: Local runs redis-server processes; Docker (docker.go) runs
// the same topologies in containers.
const (
	Local = "local"
)

// Config says what to start.
type Config struct {
	Topology string // "single" (default), "sentinel", "redlock" or "cluster"
	Backend  string // "local" (default) or "docker"
	// MaxClients is Redis's maxclients; 0 means 10000 + 128.
	MaxClients int
	// LogDir receives nodes/<node>/redis.log; required.
	LogDir string
	// RedisServer is the redis-server program; default found on PATH.
	RedisServer string
	// Persistence is "none" (default), "aof-everysec" or "aof-always".
	Persistence string
	// ReplicationLag delays the replication stream (sentinel topology).
	ReplicationLag time.Duration
	// Failover is how a fault's failover comes about (sentinel and
	// cluster topologies): FailoverForce (the default) has Sentinel or the
	// replica promote at once (SENTINEL FAILOVER, CLUSTER FAILOVER);
	// FailoverDetect leaves it to the failure detector (Sentinel's
	// down-after-milliseconds, the cluster's cluster-node-timeout), with
	// the old master serving until it notices, as in production.
	Failover string
	// ClientProxies puts a proxy between clients and each node, so that
	// the latency fault can slow replies.
	ClientProxies bool
	// Nodes is the master count of the redlock topology (default 5) and
	// of the cluster topology (default 3).
	Nodes int
	// ClockShim runs every Redis node under the clock shim, so that the
	// clock faults can shift its wall clock (Node.Clock).
	ClockShim bool
	// ClockSkew, if set, runs every Redis node's wall clock that far
	// ahead of real time (behind, if negative) from its start: what a
	// lock that computes expiry on its clients' clocks (SET PXAT) meets
	// when the machines' clocks differ. It implies ClockShim; the local
	// backend only. A clock fault's heal restores real time.
	ClockSkew time.Duration
	// Image is the docker backend's image (default DefaultImage; built
	// from the host's redis-server when not present).
	Image string
	// RedisConf are "name value" settings given to every Redis node (not
	// to sentinels) on its command line, after lockcheck's own
	// (--redis-conf "min-replicas-to-write 1").
	RedisConf []string
	// External is where the external backend's Redis is.
	External ExternalConfig
	// Say receives one-line notices (an image was built).
	Say       func(string)
	clockShim string // the built shim
}

// Cluster is a running topology.
type Cluster struct {
	Topology string
	// User and Password authenticate clients (User "" is the default
	// user); TLS, if set, is the clients' TLS configuration (external).
	User, Password string
	TLS            *tls.Config
	// MasterName is the name the sentinels monitor (sentinel topology).
	MasterName string
	Nodes      []*Node
	// Sentinels are set in the sentinel topology.
	Sentinels []*Node
	// Persistence is what a killed node keeps: "none", "aof-everysec"
	// or "aof-always" (Config.Persistence).
	Persistence string

	proxies proxies
	docker  *dockerEnv // docker backend
	// dialMap maps the addresses nodes announce (peer proxies) to the ones
	// clients dial (the node, or its client proxy).
	dialMap map[string]string
	// failover is Config.Failover, resolved.
	failover string

	// external is set for the external backend; RTT is the largest PING
	// round trip measured to it, Facts what its servers say of
	// themselves, Cleaned what Down deleted under the key prefix.
	external *ExternalConfig
	// preexisting are the keys under an external run's prefix before it
	// began (ReusePrefix): never deleted.
	preexisting map[string]bool
	// primaries is how many of Nodes (the first) served writes when an
	// external Redis was found.
	primaries int
	RTT       time.Duration
	Facts     []Facts
	Cleaned   Cleaned

	downOnce sync.Once
	downErr  error
}

// Cleaned is what Down deleted under an external Redis's key prefix.
type Cleaned struct {
	Prefix        string
	Deleted, Left int
}

// External reports whether the topology is an external Redis.
func (c *Cluster) External() bool { return c.external != nil }

// The ways a failover comes about (Config.Failover).
const (
	FailoverForce  = "force"
	FailoverDetect = "detect"
)

// WithDefaults returns cfg with its defaults filled in, or what is wrong
// with it, before anything starts.
func (cfg Config) WithDefaults() (Config, error) {
	cfg.Backend = cmp.Or(cfg.Backend, Local)
	if cfg.Backend == External {
		cfg.Topology = cmp.Or(cfg.Topology, cfg.External.Topology())
	}
	cfg.Topology = cmp.Or(cfg.Topology, Single)
	switch {
	case cfg.Nodes == 0 && cfg.Topology == RedisCluster:
		cfg.Nodes = DefaultClusterMasters
	case cfg.Nodes == 0:
		cfg.Nodes = DefaultRedlockNodes
	}
	switch {
	case cfg.Backend != Local && cfg.Backend != Docker && cfg.Backend != External:
		return cfg, fmt.Errorf("--backend %q is not supported (use local, docker or external)", cfg.Backend)
	case cfg.Topology != Single && cfg.Topology != Sentinel && cfg.Topology != Redlock && cfg.Topology != RedisCluster:
		return cfg, fmt.Errorf("--topology %q is not supported (use single, sentinel, redlock or cluster)", cfg.Topology)
	case cfg.Topology == RedisCluster && (cfg.Nodes < 3 || cfg.Nodes > 15):
		return cfg, fmt.Errorf("--nodes %d: want 3 to 15 masters (a cluster fails a master over only with a majority of masters; 3 by default)", cfg.Nodes)
	case cfg.Topology == Redlock && (cfg.Nodes < 1 || cfg.Nodes > 15):
		return cfg, fmt.Errorf("--nodes %d: want 1 to 15 masters (Redlock uses an odd number, 5 by default)", cfg.Nodes)
	case cfg.ReplicationLag < 0:
		return cfg, fmt.Errorf("--repl-lag %v: want 0 or more", cfg.ReplicationLag)
	case cfg.Failover != "" && cfg.Failover != FailoverForce && cfg.Failover != FailoverDetect:
		return cfg, fmt.Errorf("--failover %q: want force (promote at once) or detect (Sentinel's or the cluster's failure detector decides)", cfg.Failover)
	}
	if cfg.Backend == External {
		return cfg, cfg.External.check(cfg)
	}
	if _, err := confArgs(cfg.RedisConf); err != nil {
		return cfg, err
	}
	_, err := persistenceArgs(cfg.Persistence)
	return cfg, err
}

// confArgs turns --redis-conf settings into redis-server arguments.
func confArgs(conf []string) ([]string, error) {
	var args []string
	for _, c := range conf {
		f := strings.Fields(c)
		if len(f) < 2 || strings.HasPrefix(f[0], "-") {
			return nil, fmt.Errorf("--redis-conf %q: want \"name value\", as in redis.conf (e.g. \"min-replicas-to-write 1\")", c)
		}
		args = append(append(args, "--"+f[0]), f[1:]...)
	}
	return args, nil
}

// localServer is the redis-server the local backend runs, and its
// version ("", "" for another backend).
func localServer(cfg Config) (server, version string, err error) {
	if cfg.Backend != Local {
		return "", "", nil
	}
	if server, err = findServer(cfg.RedisServer); err != nil {
		return "", "", err
	}
	version, err = ServerVersion(server)
	return server, version, err
}

// Up starts the topology in cfg and waits until every node answers PING.
// On error everything started so far is stopped.
func Up(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Backend == External {
		return upExternal(ctx, cfg)
	}
	if cfg.LogDir == "" {
		return nil, errors.New("cluster: no log dir")
	}
	var l launch
	l.persist, _ = persistenceArgs(cfg.Persistence)
	if l.server, l.version, err = localServer(cfg); err != nil {
		return nil, err
	}
	l.maxClients = cmp.Or(max(cfg.MaxClients, 0), 10000+128)
	if cfg.ClockSkew != 0 && cfg.Backend != Local {
		return nil, errors.New("a Redis clock skew needs the local backend (the clock shim)")
	}
	cfg.ClockShim = cfg.ClockShim || cfg.ClockSkew != 0
	if cfg.ClockShim {
		if cfg.clockShim, err = BuildClockShim(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{Topology: cfg.Topology, Persistence: cmp.Or(cfg.Persistence, "none"), Password: randomPassword(), MasterName: MasterName, dialMap: map[string]string{}, failover: cmp.Or(cfg.Failover, FailoverForce)}
	var b backend = &localBackend{c: c, cfg: cfg, l: l}
	if cfg.Backend == Docker {
		b, err = c.dockerBackend(cfg, l)
	}
	switch {
	case err != nil:
	case cfg.Topology == Sentinel:
		err = c.upSentinel(ctx, cfg, b)
	case cfg.Topology == Redlock:
		err = c.upMasters(ctx, b, cfg.Nodes)
	case cfg.Topology == RedisCluster:
		err = c.upRedisCluster(ctx, cfg, b)
	default:
		err = c.upMasters(ctx, b, 1)
	}
	if err == nil && cfg.ClientProxies {
		err = c.addClientProxies()
	}
	for _, n := range c.Nodes {
		if err == nil && cfg.ClockSkew != 0 {
			err = n.Clock.Set(cfg.ClockSkew, 0)
		}
	}
	if err != nil {
		_ = c.Down()
		return nil, err
	}
	return c, nil
}

// addClientProxies puts a proxy in front of every node for the clients.
func (c *Cluster) addClientProxies() error {
	for _, n := range c.Nodes {
		p, err := c.proxies.newProxy(n.Name+"-client", n.Addr)
		if err != nil {
			return err
		}
		n.Client = p
		for from, to := range c.dialMap {
			if to == n.Addr {
				c.dialMap[from] = p.Addr
			}
		}
	}
	return nil
}

// Aliases maps each address a node or sentinel announces for a node to
// the node's own Addr: clients elsewhere (agents) that put proxies of
// their own in front of the nodes find the node an announced address
// means.
func (c *Cluster) Aliases() map[string]string {
	out := map[string]string{}
	for from, to := range c.dialMap {
		for _, n := range c.Nodes {
			if to == n.Addr || to == n.ClientAddr() {
				out[from] = n.Addr
			}
		}
	}
	return out
}

// ClientAddr returns where clients reach node n.
func (n *Node) ClientAddr() string {
	if n.Client != nil {
		return n.Client.Addr
	}
	return n.Addr
}

// DialAddr maps an address a node or sentinel announced to the one a
// client should dial.
func (c *Cluster) DialAddr(addr string) string {
	if a, ok := c.dialMap[addr]; ok {
		return a
	}
	return addr
}

// Addrs returns the client addresses of every node.
func (c *Cluster) Addrs() []string {
	var as []string
	for _, n := range c.Nodes {
		as = append(as, n.ClientAddr())
	}
	return as
}

// Down stops every node and removes its temp dir. It is safe to call more
// than once and from a deferred call after a panic.
func (c *Cluster) Down() error {
	c.downOnce.Do(func() {
		var errs []string
		if c.external != nil {
			if err := c.clean(); err != nil {
				errs = append(errs, err.Error())
			}
		}
		for _, n := range append(append([]*Node{}, c.Sentinels...), c.Nodes...) {
			if err := n.stop(); err != nil {
				errs = append(errs, err.Error())
			}
		}
		for _, n := range c.Nodes {
			n.stopProxies()
		}
		if err := c.docker.down(); err != nil {
			errs = append(errs, err.Error())
		}
		if len(errs) > 0 {
			c.downErr = fmt.Errorf("cluster down: %s", strings.Join(errs, "; "))
		}
	})
	return c.downErr
}

// stopProxies stops the proxies in front of n.
func (n *Node) stopProxies() {
	for _, p := range []*Proxy{n.Peer, n.Client, n.Bus} {
		if p != nil {
			p.stop()
		}
	}
}

func randomPassword() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
