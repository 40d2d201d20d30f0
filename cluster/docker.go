package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
)

// Labels on every container and network of the docker backend: the run
// they belong to, and the pid of the lockcheck that made them (cleanup
// removes those whose lockcheck is gone).
const (
	LabelRun   = "lockcheck.run"
	LabelOwner = "lockcheck.pid"
)

// Docker is the docker backend.
const Docker = "docker"

// dockerEnv is one run's share of the Docker engine: its network and image.
type dockerEnv struct {
	pool    *dockertest.Pool
	net     *dockertest.Network
	runID   string
	image   string
	gateway string // the network's gateway: the host, as containers see it
	labels  map[string]string
	shim    string // the clock shim on the host ("": none)
}

// container is a node that runs in a container.
type container struct {
	env *dockerEnv
	id  string
}

// dockerPool connects to the Docker engine (DOCKER_HOST or the default
// socket), or says in one line that none is reachable.
func dockerPool() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err == nil {
		pool.MaxWait = 30 * time.Second
		err = pool.Client.Ping()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: no Docker engine reachable (%v): start dockerd or set DOCKER_HOST, or use --backend local", ErrNotInstalled, err)
	}
	return pool, nil
}

// dockerBackend makes the run's docker network, on which each server
// is a container of the image (ensureImage: the host's redis-server in a
// FROM scratch image), its port published on a free loopback port.
func (c *Cluster) dockerBackend(cfg Config, l launch) (*dockerBackend, error) {
	pool, err := dockerPool()
	if err != nil {
		return nil, err
	}
	say := cfg.Say
	if say == nil {
		say = func(string) {}
	}
	image, err := ensureImage(pool.Client, cfg.Image, cfg.RedisServer, say)
	if err != nil {
		return nil, err
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	d := &dockerEnv{pool: pool, runID: hex.EncodeToString(id[:]), image: image, shim: cfg.clockShim}
	d.labels = map[string]string{LabelRun: d.runID, LabelOwner: strconv.Itoa(os.Getpid())}
	d.net, err = pool.CreateNetwork("lockcheck-"+d.runID, func(o *dc.CreateNetworkOptions) {
		o.Driver, o.Labels = "bridge", d.labels
	})
	if err != nil {
		return nil, fmt.Errorf("docker network: %w", err)
	}
	c.docker = d
	if info, err := pool.Client.NetworkInfo(d.net.Network.ID); err == nil {
		d.net.Network = info
	}
	if cfgs := d.net.Network.IPAM.Config; len(cfgs) > 0 {
		d.gateway = cfgs[0].Gateway
	}
	if d.gateway == "" {
		return nil, errors.New("docker network has no gateway")
	}
	return &dockerBackend{c: c, cfg: cfg, l: l}, nil
}

// dockerBackend runs each server in a container: port 6379 (16379 its
// cluster bus) inside, the peer and bus proxies on the network's
// gateway, the password in a config file the container reads
// (secretsConf), not in its arguments, which docker inspect and ps show.
type dockerBackend struct {
	c   *Cluster
	cfg Config
	l   launch
}

const containerBusPort = 16379

func (b *dockerBackend) host() string { return b.c.docker.gateway }

func (b *dockerBackend) node(ctx context.Context, name string, args []string) (*Node, error) {
	all := append(append([]string{"--port", "6379"}, b.l.args()...), args...)
	return b.c.startContainer(ctx, b.cfg, name, all, b.c.Password)
}

func (b *dockerBackend) sentinel(ctx context.Context, name, conf string) (*Node, error) {
	s, err := b.c.startContainerConf(ctx, b.cfg, name, "port 6379\n"+conf)
	if err != nil {
		return s, err
	}
	// Sentinels tell clients of each other by container address.
	b.c.dialMap[net.JoinHostPort(s.container().ip(), "6379")] = s.Addr
	return s, nil
}

func (b *dockerBackend) busPort() (int, error) { return containerBusPort, nil }

func (b *dockerBackend) inner(n *Node, port int) string {
	return net.JoinHostPort(n.container().ip(), strconv.Itoa(cmp.Or(port, 6379)))
}

func (c *Cluster) startContainer(ctx context.Context, cfg Config, name string, args []string, password string) (*Node, error) {
	conf, _ := confArgs(cfg.RedisConf) // checked by WithDefaults
	return c.runContainer(ctx, cfg, name, append(slices.Clone(args), conf...), password, "")
}

// startContainerConf starts a sentinel from conf (written to its dir,
// mounted at /data).
func (c *Cluster) startContainerConf(ctx context.Context, cfg Config, name, conf string) (*Node, error) {
	return c.runContainer(ctx, cfg, name, []string{"/data/sentinel.conf", "--sentinel"}, "", conf)
}

// runContainer starts a node in a container on the run's network, its
// port published on a free 127.0.0.1 port, and waits for PING. Its host
// dir holds the owner file, a sentinel's config and the clock file.
func (c *Cluster) runContainer(ctx context.Context, cfg Config, name string, args []string, password, sentinelConf string) (n *Node, err error) {
	d := c.docker
	logDir := filepath.Join(cfg.LogDir, "nodes", name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", TempPrefix+name+"-")
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			_ = os.RemoveAll(dir) // nothing runs from it
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	n = &Node{Name: name, LogPath: filepath.Join(logDir, "redis.log"), dir: dir}
	mounts, env, args, err := d.containerFiles(n, args, password, sentinelConf)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	res, err := d.start(name, args, env, mounts, port)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	started = true
	n.rt = &container{env: d, id: res.Container.ID}
	n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	track(n)
	if err := c.adopt(ctx, n, password); err != nil {
		return nil, err
	}
	n.Version = nodeVersion(ctx, n.Addr, password)
	return n, nil
}

// containerFiles is what node n's container mounts from its host dir, its
// environment, and its redis-server args: its secrets' config first (a
// node with a password), its data dir (a Redis node: a power loss under
// appendfsync everysec cuts the AOF there, CutAOF, as a local node's).
func (d *dockerEnv) containerFiles(n *Node, args []string, password, sentinelConf string) (mounts, env, _ []string, err error) {
	mounts, env, err = d.mountsOf(n, sentinelConf)
	if err != nil {
		return nil, nil, nil, err
	}
	if password != "" && sentinelConf == "" {
		conf, err := secretsConf(n.dir, password)
		if err != nil {
			return nil, nil, nil, err
		}
		// redis-server's first argument may be its config file.
		mounts = append(mounts, n.dir+":"+secretsDir+":ro")
		args = append([]string{secretsDir + "/" + conf}, args...)
	}
	if sentinelConf == "" {
		mounts = append(mounts, n.dir+":"+dataDir)
		args = append(args, "--dir", dataDir)
	}
	return mounts, env, args, nil
}

// start runs the container of node name, its port 6379 on port of the
// loopback.
func (d *dockerEnv) start(name string, args, env, mounts []string, port int) (*dockertest.Resource, error) {
	repo, tag := d.image, "latest"
	if i := strings.LastIndexByte(d.image, ':'); i > strings.LastIndexByte(d.image, '/') {
		repo, tag = d.image[:i], d.image[i+1:]
	}
	return d.pool.RunWithOptions(&dockertest.RunOptions{Name: "lockcheck-" + d.runID + "-" + name,
		Repository: repo, Tag: tag, Cmd: args, Env: env, Mounts: mounts, Labels: d.labels,
		Networks: []*dockertest.Network{d.net}, ExposedPorts: []string{"6379/tcp"},
		PortBindings: map[dc.Port][]dc.PortBinding{"6379/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}}},
	}, func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
}

// dataDir is where a node's container keeps its data: its host dir.
const dataDir = "/lockcheck/data"

// secretsDir is where a node's container finds its secrets file.
const secretsDir = "/lockcheck/secrets"

// secretsConf writes, in a node's host dir (only its owner may enter
// it), the config lines that carry the run's password, and returns the
// file's name.
func secretsConf(dir, password string) (string, error) {
	const name = "secrets.conf"
	return name, os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("requirepass %s\nmasterauth %s\n", password, password)), 0o600)
}

// mountsOf is what node n's container mounts from its host dir (a
// sentinel's config; the clock shim and its clock file), and the
// environment that loads the shim.
func (d *dockerEnv) mountsOf(n *Node, sentinelConf string) (mounts, env []string, err error) {
	if sentinelConf != "" {
		_ = os.Chmod(n.dir, 0o777)
		if err := os.WriteFile(filepath.Join(n.dir, "sentinel.conf"), []byte(sentinelConf), 0o666); err != nil {
			return nil, nil, err
		}
		mounts = append(mounts, n.dir+":/data")
	}
	if d.shim != "" && n.Name[0] == 'n' {
		clk, err := newClock(filepath.Join(n.dir, "clock"))
		if err != nil {
			return nil, nil, err
		}
		n.Clock = clk
		mounts = append(mounts, d.shim+":/lockcheck/clockshim.so:ro", n.dir+":/lockcheck/clock")
		env = []string{"LD_PRELOAD=/lockcheck/clockshim.so", ClockShimEnv + "=/lockcheck/clock/clock"}
	}
	return mounts, env, nil
}

// nodeVersion asks a node for its redis_version.
func nodeVersion(ctx context.Context, addr, password string) string {
	rc := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer rc.Close()
	info, _ := rc.Info(ctx, "server").Result()
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			return v
		}
	}
	return ""
}

// ip is the container's address on the run's network.
func (ct *container) ip() string {
	c, err := ct.env.pool.Client.InspectContainer(ct.id)
	if err != nil {
		return ""
	}
	if ep, ok := c.NetworkSettings.Networks[ct.env.net.Network.Name]; ok {
		return ep.IPAddress
	}
	return ""
}

// container returns the node's container (docker backend), or nil.
func (n *Node) container() *container {
	ct, _ := n.rt.(*container)
	return ct
}

func (ct *container) restart(ctx context.Context, ready func(context.Context) error) error {
	// The same container: its port, and its data dir (so its AOF).
	if ct.running() {
		return errors.New("still running")
	}
	if err := ct.start(); err != nil {
		return err
	}
	return ready(ctx)
}

func (ct *container) stop(logPath string) error { return ct.remove(logPath) }
func (ct *container) abandon()                  { _ = ct.remove("") }

// exited is nil: waiting on a container's exit is docker's business.
func (ct *container) exited() <-chan struct{} { return nil }

func (ct *container) pause() error  { return ct.env.pool.Client.PauseContainer(ct.id) }
func (ct *container) resume() error { return ct.env.pool.Client.UnpauseContainer(ct.id) }

// kill sends SIGKILL and waits until the container has stopped.
func (ct *container) kill() error {
	cl := ct.env.pool.Client
	if c, err := cl.InspectContainer(ct.id); err == nil && c.State.Paused {
		_ = cl.UnpauseContainer(ct.id)
	}
	if err := cl.KillContainer(dc.KillContainerOptions{ID: ct.id, Signal: dc.SIGKILL}); err != nil {
		var nr *dc.ContainerNotRunning
		if !errors.As(err, &nr) {
			return err
		}
	}
	for i := 0; i < 200; i++ {
		c, err := cl.InspectContainer(ct.id)
		if err != nil || !c.State.Running {
			return err
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("container %s still running after SIGKILL", ct.id[:12])
}

func (ct *container) start() error { return ct.env.pool.Client.StartContainer(ct.id, nil) }

func (ct *container) running() bool {
	c, err := ct.env.pool.Client.InspectContainer(ct.id)
	return err == nil && c.State.Running
}

func (ct *container) pid() int {
	c, err := ct.env.pool.Client.InspectContainer(ct.id)
	if err != nil {
		return 0
	}
	return c.State.Pid
}

// remove copies the container's log to logPath, then removes it.
func (ct *container) remove(logPath string) error {
	cl := ct.env.pool.Client
	if logPath != "" {
		if f, err := os.Create(logPath); err == nil {
			_ = cl.Logs(dc.LogsOptions{Container: ct.id, OutputStream: f, ErrorStream: f, Stdout: true, Stderr: true, Timestamps: false})
			f.Close()
		}
	}
	return cl.RemoveContainer(dc.RemoveContainerOptions{ID: ct.id, Force: true, RemoveVolumes: true})
}

// down removes the run's network (its containers are gone by then).
func (d *dockerEnv) down() error {
	if d == nil || d.net == nil {
		return nil
	}
	return d.pool.Client.RemoveNetwork(d.net.Network.ID)
}

// DockerLeftovers removes the containers and networks of runs whose
// lockcheck is gone. Without a reachable Docker engine it does nothing.
func DockerLeftovers() ([]string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, nil
	}
	pool.Client.SetTimeout(5 * time.Second)
	if pool.Client.Ping() != nil {
		return nil, nil
	}
	gone := func(labels map[string]string) bool {
		pid, err := strconv.Atoi(labels[LabelOwner])
		return labels[LabelRun] != "" && (err != nil || !pidAlive(pid))
	}
	var removed []string
	cs, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {LabelRun}}})
	if err != nil {
		return nil, err
	}
	for _, ct := range cs {
		if gone(ct.Labels) && pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true, RemoveVolumes: true}) == nil {
			removed = append(removed, "container "+strings.TrimPrefix(firstOr(ct.Names, ct.ID), "/"))
		}
	}
	nets, err := pool.Client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun: true}})
	if err != nil {
		return removed, err
	}
	for _, n := range nets {
		if gone(n.Labels) && pool.Client.RemoveNetwork(n.ID) == nil {
			removed = append(removed, "network "+n.Name)
		}
	}
	return removed, nil
}

func firstOr(ss []string, s string) string {
	if len(ss) > 0 {
		return ss[0]
	}
	return s
}
