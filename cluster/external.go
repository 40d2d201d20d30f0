package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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

// TLSOptions are the --tls flags.
type TLSOptions struct {
	Enabled       bool
	CA, Cert, Key string
	ServerName    string
	Insecure      bool
}

// Config builds the TLS client configuration (nil when TLS is off).
func (o TLSOptions) Config() (*tls.Config, error) {
	if !o.Enabled && o.CA == "" && o.Cert == "" && o.Key == "" && o.ServerName == "" && !o.Insecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, InsecureSkipVerify: o.Insecure}
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.CA)
		}
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, errors.New("--tls-cert and --tls-key go together (a client certificate and its key)")
	}
	if o.Cert != "" {
		c, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
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

// Facts are what an external server says about itself that matters to a
// lock, read with INFO and, where the user may, CONFIG GET: node, addr,
// version, mode, role, appendonly, appendfsync, min-replicas-to-write,
// replicas, replication-lag-bytes (the report's servers section), those
// it did not say left out.
type Facts map[string]string

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

// Options returns go-redis options for addr with the cluster's
// credentials and TLS (the server name checked against the address
// dialed, unless --tls-server-name says otherwise).
func (c *Cluster) Options(addr string) *redis.Options {
	o := &redis.Options{Addr: addr, Username: c.User, Password: c.Password, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	if c.TLS != nil {
		o.TLSConfig = TLSFor(c.TLS, addr)
	}
	return o
}

// TLSFor returns cfg with the server name of addr, unless cfg names one.
func TLSFor(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.ServerName, _, _ = net.SplitHostPort(addr)
	return cfg
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

// sentinelNodes asks the sentinels for the master and its replicas.
func (c *Cluster) sentinelNodes(ctx context.Context) ([]string, error) {
	e := c.external
	var last error
	for _, s := range e.Sentinels {
		o := c.Options(s)
		o.Username, o.Password = "", e.SentinelPassword
		sc := redis.NewSentinelClient(o)
		m, err := sc.GetMasterAddrByName(ctx, e.MasterName).Result()
		if err != nil {
			sc.Close()
			last = fmt.Errorf("sentinel %s: master %q: %v", s, e.MasterName, err)
			if errors.Is(err, redis.Nil) {
				last = fmt.Errorf("sentinel %s monitors no master named %q: check --master-name", s, e.MasterName)
			} else if !strings.Contains(err.Error(), "i/o timeout") && !strings.Contains(err.Error(), "refused") {
				return nil, last
			}
			continue
		}
		addrs := []string{net.JoinHostPort(m[0], m[1])}
		reps, err := sc.Replicas(ctx, e.MasterName).Result()
		sc.Close()
		if err != nil {
			return nil, fmt.Errorf("sentinel %s: replicas of %q: %v", s, e.MasterName, err)
		}
		for _, r := range reps {
			if !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") {
				addrs = append(addrs, net.JoinHostPort(r["ip"], r["port"]))
			}
		}
		return addrs, nil
	}
	return nil, fmt.Errorf("no sentinel answers: %w", last)
}

// clusterNodes asks the first seed that answers for the cluster's
// masters and replicas (CLUSTER SHARDS), masters first.
func (c *Cluster) clusterNodes(ctx context.Context, seeds []string) (addrs []string, masters int, err error) {
	var last error
	for _, s := range seeds {
		rc := redis.NewClient(c.Options(s))
		shards, err := rc.ClusterShards(ctx).Result()
		rc.Close()
		if err != nil {
			last = reach(s, err)
			continue
		}
		var ms, replicas []string
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				if n.Health != "online" {
					continue
				}
				host := cmpOr(n.Endpoint, n.IP)
				port := n.Port
				if c.TLS != nil && n.TLSPort != 0 {
					port = n.TLSPort
				}
				a := net.JoinHostPort(host, strconv.FormatInt(port, 10))
				if n.Role == "master" {
					ms = append(ms, a)
				} else {
					replicas = append(replicas, a)
				}
			}
		}
		if len(ms) == 0 {
			return nil, 0, fmt.Errorf("redis %s: CLUSTER SHARDS names no master online", s)
		}
		return append(ms, replicas...), len(ms), nil
	}
	return nil, 0, last
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

// ProbeKey returns a key under the prefix for a probe (its own hash tag
// i, so that a cluster's probes can land on every master).
func (e ExternalConfig) ProbeKey(i int) string {
	return e.KeyPrefix + "{probe" + strconv.Itoa(i) + "}"
}

// probe runs, on each master, the commands the locks send, on keys under
// the prefix, and names the first the user may not run. Its keys are
// deleted again.
func (c *Cluster) probe(ctx context.Context) error {
	masters, err := c.masterKeys(ctx)
	if err != nil {
		return err
	}
	for addr, key := range masters {
		rc := redis.NewClient(c.Options(addr))
		err := c.probeOn(ctx, rc, key)
		rc.Close()
		if err != nil {
			return fmt.Errorf("redis %s: %w", addr, err)
		}
	}
	return nil
}

// probeScript reads a key from Lua, as the locks' scripts do.
var probeScript = redis.NewScript(`return redis.call('GET', KEYS[1])`)

func (c *Cluster) probeOn(ctx context.Context, rc *redis.Client, key string) error {
	fence := key + ":fence"
	type step struct {
		cmd, why string
		run      func() error
	}
	steps := []step{
		{"SET", "acquires with SET NX PX", func() error { return rc.SetNX(ctx, key, "probe", 10*time.Second).Err() }},
		{"GET", "reads the holder", func() error { return rc.Get(ctx, key).Err() }},
		{"PEXPIRE", "extends", func() error { return rc.PExpire(ctx, key, 10*time.Second).Err() }},
		{"EVAL", "releases and extends with Lua", func() error { return probeScript.Eval(ctx, rc, []string{key}).Err() }},
		{"EVALSHA", "runs its Lua scripts by hash", func() error { return probeScript.EvalSha(ctx, rc, []string{key}).Err() }},
		{"INCR", "counts fencing tokens", func() error { return rc.Incr(ctx, fence).Err() }},
		{"DEL", "releases, and deletes its keys at the end", func() error { return rc.Del(ctx, key, fence).Err() }},
		{"SCAN", "finds its keys to delete them at the end", func() error {
			return rc.Scan(ctx, 0, globEscape(c.external.KeyPrefix)+"*", 10).Err()
		}},
	}
	if c.external.Wait {
		steps = append(steps, step{"WAIT", "waits for a replica (setnx-wait)", func() error { return rc.Wait(ctx, 0, 0).Err() }})
	}
	for _, s := range steps {
		err := s.run()
		if err == nil || errors.Is(err, redis.Nil) {
			continue
		}
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "key"):
			return fmt.Errorf("user %q may not touch key %s with %s (%s): allow the key pattern %s* (ACL SETUSER %s ~%s*) or choose a --key-prefix it may use",
				c.userName(), key, s.cmd, msg, c.external.KeyPrefix, c.userName(), c.external.KeyPrefix)
		case strings.HasPrefix(msg, "NOPERM"):
			return fmt.Errorf("user %q may not run %s, which lockcheck needs (it %s): ACL SETUSER %s +%s", c.userName(), s.cmd, s.why, c.userName(), strings.ToLower(s.cmd))
		}
		return fmt.Errorf("%s on %s: %v", s.cmd, key, err)
	}
	return nil
}

func (c *Cluster) userName() string {
	if c.User == "" {
		return "default"
	}
	return c.User
}

// masterKeys returns each master's address with a probe key it serves.
func (c *Cluster) masterKeys(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	switch c.Topology {
	case Sentinel:
		out[c.Nodes[0].Addr] = c.external.ProbeKey(0)
	case RedisCluster:
		cc := c.clusterClient()
		defer cc.Close()
		for i := 0; len(out) < c.primaries && i < 10*16384; i++ {
			key := c.external.ProbeKey(i)
			m, err := cc.MasterForKey(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("cluster: which master serves %s: %w", key, err)
			}
			if _, ok := out[m.Options().Addr]; !ok {
				out[m.Options().Addr] = key
			}
		}
	default:
		for _, n := range c.Nodes {
			out[n.Addr] = c.external.ProbeKey(0)
		}
	}
	return out, nil
}

func (c *Cluster) clusterClient() *redis.ClusterClient {
	o := c.Options("")
	co := &redis.ClusterOptions{Addrs: c.external.ClusterAddrs, Username: o.Username, Password: o.Password, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout}
	if c.TLS != nil {
		co.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: TLSFor(c.TLS, addr)}
			return d.DialContext(ctx, network, addr)
		}
	}
	return redis.NewClusterClient(co)
}

// roundTrip returns the largest of 20 PING round trips to addr.
func (c *Cluster) roundTrip(ctx context.Context, addr string) time.Duration {
	rc := redis.NewClient(c.Options(addr))
	defer rc.Close()
	var worst time.Duration
	for range 20 {
		t := time.Now()
		if rc.Ping(ctx).Err() != nil {
			break
		}
		worst = max(worst, time.Since(t))
	}
	return worst
}

// facts reads what node n says about itself; what the user may not read
// is left out.
func (c *Cluster) facts(ctx context.Context, n *Node) Facts {
	f := Facts{"node": n.Name, "addr": n.Addr}
	rc := redis.NewClient(c.Options(n.Addr))
	defer rc.Close()
	info := map[string]string{}
	if s, err := rc.Info(ctx, "server", "persistence", "replication").Result(); err == nil {
		for _, line := range strings.Split(s, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				info[k] = v
			}
		}
	}
	for name, key := range map[string]string{"version": "redis_version", "mode": "redis_mode", "role": "role", "replicas": "connected_slaves"} {
		if v := info[key]; v != "" {
			f[name] = v
		}
	}
	if v, ok := map[string]string{"1": "yes", "0": "no"}[info["aof_enabled"]]; ok {
		f["appendonly"] = v
	}
	replicas, _ := strconv.Atoi(info["connected_slaves"])
	offset, _ := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	lag := int64(-1)
	for i := range replicas {
		for _, kv := range strings.Split(info["slave"+strconv.Itoa(i)], ",") {
			if v, ok := strings.CutPrefix(kv, "offset="); ok {
				o, _ := strconv.ParseInt(v, 10, 64)
				lag = max(lag, offset-o)
			}
		}
	}
	if lag >= 0 {
		f["replication-lag-bytes"] = strconv.FormatInt(lag, 10)
	}
	for _, name := range []string{"appendfsync", "min-replicas-to-write"} {
		if m, err := rc.ConfigGet(ctx, name).Result(); err == nil && m[name] != "" {
			f[name] = m[name]
		}
	}
	return f
}

// globEscape escapes the glob characters of a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sentinelMaster returns a client to the current master of the set.
func (c *Cluster) sentinelMaster(ctx context.Context) (*redis.Client, error) {
	addrs, err := c.sentinelNodes(ctx)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(c.Options(addrs[0])), nil
}
