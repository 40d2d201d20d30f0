package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// External is the backend that runs nothing: a Redis the user runs (a
// managed service, their own Sentinel set or Redis Cluster), which
// lockcheck drives without ever controlling it.
const External = "external"

// ExternalConfig says where an external Redis is and how to reach it.
// Exactly one of Addrs, Sentinels or ClusterAddrs is set.
type ExternalConfig struct {
	// Addrs: one node (topology single) or independent masters (redlock).
	Addrs []string
	// Sentinels and MasterName: a Sentinel set (topology sentinel).
	Sentinels  []string
	MasterName string
	// ClusterAddrs seed a Redis Cluster (topology cluster).
	ClusterAddrs []string
	// User and Password authenticate (ACL user; "" is the default user).
	// SentinelPassword, if set, authenticates to the sentinels.
	User, Password, SentinelPassword string
	TLS                              TLSOptions
	// KeyPrefix is the prefix of every key the run touches; lockcheck
	// probes under it and deletes what is under it at the end. It must
	// hold no key when the run starts, unless ReusePrefix.
	KeyPrefix string
	// ReusePrefix: keys already under the prefix are the user's; they
	// are left alone, and only keys the run created are deleted.
	ReusePrefix bool
	// Wait: the lock sends WAIT, so the user must be allowed it.
	Wait bool
}

// Topology returns the topology the addresses describe.
func (e ExternalConfig) Topology() string {
	switch {
	case len(e.Sentinels) > 0:
		return Sentinel
	case len(e.ClusterAddrs) > 0:
		return RedisCluster
	case len(e.Addrs) > 1:
		return Redlock
	}
	return Single
}

// check says what is wrong with an external configuration.
func (e ExternalConfig) check(cfg Config) error {
	set := 0
	for _, l := range [][]string{e.Addrs, e.Sentinels, e.ClusterAddrs} {
		if len(l) > 0 {
			set++
		}
	}
	switch {
	case set != 1:
		return errors.New("--backend external needs exactly one of --redis ADDR[,ADDR...], --sentinel ADDR,... (with --master-name) or --cluster ADDR,...")
	case len(e.Sentinels) > 0 && e.MasterName == "":
		return errors.New("--sentinel needs --master-name (the name the sentinels monitor)")
	case cfg.Topology != e.Topology():
		return fmt.Errorf("the external Redis given is topology %s, but this run wants %s (a Redlock lock needs several --redis masters; the others one --redis, --sentinel or --cluster)", e.Topology(), cfg.Topology)
	case e.KeyPrefix == "" || strings.ContainsAny(e.KeyPrefix, "{}*?[]\\"):
		return fmt.Errorf("--key-prefix %q: want a non-empty prefix without {, }, *, ?, [, ] or \\ (keys get their own hash tags after it)", e.KeyPrefix)
	case cfg.Persistence != "" && cfg.Persistence != "none", cfg.ReplicationLag != 0, len(cfg.RedisConf) > 0:
		return errors.New("--persistence, --repl-lag and --redis-conf configure a Redis lockcheck runs; an external Redis keeps its own settings (they are read and recorded)")
	case cfg.ClockShim:
		return errors.New("the clock faults shift a server's clock, which needs a backend that runs Redis: use --backend local or docker")
	}
	for _, a := range slices.Concat(e.Addrs, e.Sentinels, e.ClusterAddrs) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("redis address %q: want HOST:PORT", a)
		}
	}
	_, err := e.TLS.Config()
	return err
}

// externalRuntime is a node lockcheck does not run: every fault that
// would act on the server is refused before the run, so these are never
// called in a run.
type externalRuntime struct{}

var errExternal = errors.New("an external Redis is not lockcheck's to stop, kill or restart")

func (externalRuntime) pause() error  { return errExternal }
func (externalRuntime) resume() error { return errExternal }
func (externalRuntime) kill() error   { return errExternal }
func (externalRuntime) restart(context.Context, func(context.Context) error) error {
	return errExternal
}
func (externalRuntime) stop(string) error       { return nil }
func (externalRuntime) abandon()                {}
func (externalRuntime) pid() int                { return 0 }
func (externalRuntime) exited() <-chan struct{} { return nil }

// ErrExternal marks a failure to use an external Redis that the user
// fixes (an address, a credential, a certificate, a permission): exit 2.
var ErrExternal = errors.New("external redis")

// upExternal finds the nodes of an external Redis, checks that each one
// answers and that the user may run what the locks send on keys under the
// prefix, and reads what each server says about itself.
func upExternal(ctx context.Context, cfg Config) (*Cluster, error) {
	e := cfg.External
	c := &Cluster{Topology: cfg.Topology, User: e.User, Password: e.Password, MasterName: e.MasterName,
		dialMap: map[string]string{}, external: &e}
	err := c.connect(ctx, e)
	if err == nil && cfg.ClientProxies {
		err = c.addClientProxies()
	}
	if err != nil {
		c.external = nil // no run used it: nothing of the run's to delete
		_ = c.Down()
		return nil, fmt.Errorf("%w: %w", ErrExternal, err)
	}
	return c, nil
}

func (c *Cluster) connect(ctx context.Context, e ExternalConfig) error {
	var err error
	if c.TLS, err = e.TLS.Config(); err != nil {
		return err
	}
	add := func(name, addr string) *Node {
		n := &Node{Name: name, Addr: addr, rt: externalRuntime{}}
		c.Nodes = append(c.Nodes, n)
		c.dialMap[addr] = addr
		return n
	}
	switch c.Topology {
	case Sentinel:
		for i, a := range e.Sentinels {
			c.Sentinels = append(c.Sentinels, &Node{Name: "s" + strconv.Itoa(i+1), Addr: a, rt: externalRuntime{}})
		}
		addrs, err := c.sentinelNodes(ctx)
		if err != nil {
			return err
		}
		c.primaries = 1
		for i, a := range addrs {
			add("n"+strconv.Itoa(i+1), a)
		}
	case RedisCluster:
		addrs, masters, err := c.clusterNodes(ctx, e.ClusterAddrs)
		if err != nil {
			return err
		}
		c.primaries = masters
		for i, a := range addrs {
			add("n"+strconv.Itoa(i+1), a)
		}
	default:
		for i, a := range e.Addrs {
			add("n"+strconv.Itoa(i+1), a)
		}
		c.primaries = len(e.Addrs)
	}
	for _, n := range c.Nodes {
		if err := c.ping(ctx, n.Addr); err != nil {
			return err
		}
	}
	if err := c.probe(ctx); err != nil {
		return err
	}
	if err := c.claimPrefix(ctx); err != nil {
		return err
	}
	c.RTT = c.roundTrip(ctx, c.Nodes[0].Addr)
	for _, n := range c.Nodes {
		f := c.facts(ctx, n)
		n.Version = f["version"]
		c.Facts = append(c.Facts, f)
	}
	return nil
}

// reach turns a failure to reach addr into one line that says what to
// check.
func reach(addr string, err error) error {
	var cerr *tls.CertificateVerificationError
	var herr x509.HostnameError
	s := err.Error()
	switch {
	case errors.As(err, &herr):
		return fmt.Errorf("redis %s: its TLS certificate is not for that name (%v): connect by a name it holds, or set --tls-server-name", addr, herr)
	case errors.As(err, &cerr):
		return fmt.Errorf("redis %s: its TLS certificate is not trusted (%v): give its CA with --tls-ca", addr, cerr.Err)
	case strings.Contains(s, "WRONGPASS"), strings.Contains(s, "NOAUTH"), strings.Contains(s, "invalid password"):
		return fmt.Errorf("redis %s refused the credentials (%s): check --redis-user and the password (LOCKCHECK_REDIS_PASSWORD or --redis-password-file)", addr, s)
	case strings.Contains(s, "connection reset"), strings.Contains(s, "EOF"), strings.Contains(s, "first record does not look like a TLS handshake"):
		return fmt.Errorf("redis %s: %s: is TLS on at one end only? (--tls)", addr, s)
	}
	return fmt.Errorf("redis %s does not answer (%s): check the address and that it is reachable from here", addr, s)
}

func (c *Cluster) ping(ctx context.Context, addr string) error {
	rc := redis.NewClient(c.Options(addr))
	defer rc.Close()
	if err := rc.Ping(ctx).Err(); err != nil {
		if strings.HasPrefix(err.Error(), "NOPERM") {
			return nil // answered: PING itself is not the user's to run
		}
		return reach(addr, err)
	}
	return nil
}

// KeyPrefix returns the prefix of every key of a run on an external
// Redis ("" for one lockcheck runs).
func (c *Cluster) KeyPrefix() string {
	if c.external == nil {
		return ""
	}
	return c.external.KeyPrefix
}

// SentinelPassword returns the sentinels' password (external).
func (c *Cluster) SentinelPassword() string {
	if c.external == nil {
		return ""
	}
	return c.external.SentinelPassword
}

// Primaries returns the nodes that served writes when the external
// Redis was found (nil for a Redis lockcheck runs: ask it).
func (c *Cluster) Primaries() []*Node {
	if c.external == nil {
		return nil
	}
	return slices.Clone(c.Nodes[:c.primaries])
}

func cmpOr(a, b string) string {
	if a != "" && a != "?" {
		return a
	}
	return b
}
