package harness

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// ErrConfig marks a user mistake (bad option, missing program): exit 2.
var ErrConfig = workload.ErrConfig

// Config is one run.
type Config struct {
	// Name groups runs under results/<name>/; default the lock's name.
	Name string
	// OutDir is the results root; default "results".
	OutDir string
	// Lock names a lock in Registry (default lockimpl.All()); a lock
	// of the user's can be registered there (process.Entry for a
	// lock process). Lock is ignored for the lookup if Factory is set.
	Lock     string
	Registry *lockimpl.Registry
	// Factory builds the Locker under test (a user's own lock, whose
	// go-redis clients must take Env's Hooks and DialAddr for client
	// faults to reach it); Lock then names it in the results, and
	// LockVersion says which version it is.
	Factory     lockimpl.Factory
	LockVersion string
	Workload    workload.Config
	Cluster     cluster.Config
	// Running, if set, is a cluster the caller started and will stop: the
	// run uses it instead of starting one (lockcheck bench measures its
	// baseline on the same node).
	Running *cluster.Cluster
	// Nemesis is the fault schedule (no faults if empty).
	Nemesis nemesis.Config
	// RestartDelay is how long kill-redis keeps a node down.
	RestartDelay time.Duration
	// Check tunes the checkers. InfoHorizon 0 means the op timeout plus
	// one second: an op can take effect no later than that after it gave up.
	Check checker.Options
	// Progress receives a live progress line each second (nil: none).
	Progress io.Writer
	// Args is the command line, recorded in run.json to reproduce the run.
	Args []string
	// Metrics, if set, is HOST:PORT (HOST "" is 127.0.0.1) of a
	// Prometheus endpoint, /metrics, served while the clients run.
	Metrics string
	// Thresholds are performance gates over the run's figures
	// (report.ParseThreshold); results.json and junit.xml say how each
	// fared, and Result.ThresholdsFailed whether one failed.
	Thresholds []report.Threshold
	// TuneProcs, if positive, is spent at the start of the run choosing
	// the clients' GOMAXPROCS, one P or all, by their acquisitions/s
	// (procsTuner; lockcheck bench tunes in its warm-up). The check that
	// follows the clients has every P again. Result.Procs says the choice.
	TuneProcs time.Duration

	// Options, with Agents set, play the clients on agents and make this
	// run their coordinator, which merges their ops into one history on
	// its clock.
	agent.Options
}

// plan is a run's configuration, checked and with its defaults filled in.
type plan struct {
	cfg      Config
	workload workload.Config
	nemesis  nemesis.Config
	factory  lockimpl.Factory
	lockName string
	// shape is the shape the run is judged as where the lock declares
	// one that only a name tells (recordedShape): run.json's and the
	// check's.
	shape string
	// redisVersion is the local redis-server's; the docker backend needs
	// none here (its version comes from the nodes once they run).
	redisVersion string
	// autoPrefix: an external Redis with no --key-prefix, so the run's
	// keys go under lockcheck:<run id>:.
	autoPrefix bool
}

// Validate says what is wrong with cfg, if anything, without starting
// anything: what Run would refuse with ErrConfig before it starts Redis.
func Validate(cfg Config) error {
	if _, err := prepare(cfg); err != nil {
		return configErr(err)
	}
	return nil
}

// prepare checks every part of cfg before anything starts, and fills in
// the defaults: one place that every caller of Run passes through.
func prepare(cfg Config) (plan, error) {
	p := plan{cfg: cfg}
	var err error
	if p.workload, err = cfg.Workload.WithDefaults(); err != nil {
		return p, err
	}
	e, err := cfg.Entry()
	if err != nil {
		return p, err
	}
	p.factory, p.lockName = e.Factory, SafeName(e.Name)
	if p.shape, err = recordedShape(e, p.workload); err != nil {
		return p, err
	}
	if err := e.FitsTTL(p.workload.TTL); err != nil {
		return p, err
	}
	p.cfg.LockVersion = cmp.Or(p.cfg.LockVersion, e.Version)
	if e.Waits && e.Topology == "" {
		switch cfg.Cluster.Topology {
		case "":
			p.cfg.Cluster.Topology = cluster.Sentinel
		case cluster.Single, cluster.Redlock:
			return p, fmt.Errorf("lock %s waits for a replica (WAIT): it needs --topology sentinel or cluster, not %s", p.lockName, cfg.Cluster.Topology)
		}
	}
	if topology := e.Topology; topology != "" {
		if cfg.Cluster.Topology != "" && cfg.Cluster.Topology != topology {
			return p, fmt.Errorf("lock %s needs --topology %s, not %s", p.lockName, topology, cfg.Cluster.Topology)
		}
		p.cfg.Cluster.Topology = topology
	}
	if err := p.faultsAndServers(e); err != nil {
		return p, err
	}
	if cfg.Metrics != "" {
		if p.cfg.Metrics, err = metricsAddr(cfg.Metrics); err != nil {
			return p, err
		}
	}
	if err := p.fitsAgents(e); err != nil {
		return p, err
	}
	if cfg.RestartDelay < 0 {
		return p, errors.New("--restart-delay must not be negative")
	}
	if err := cfg.Check.Validate(); err != nil {
		return p, err
	}
	if err := fitsMachine(p.workload.Clients/max(1, cfg.Agents), max(1, p.cfg.Cluster.Nodes)); err != nil {
		return p, err
	}
	if p.cfg.Cluster.Backend == cluster.Local && cfg.Running == nil {
		if p.redisVersion, err = cluster.ServerVersion(cfg.Cluster.RedisServer); err != nil {
			return p, err
		}
	}
	return p, nil
}

// faultsAndServers checks the faults against the lock and the servers,
// and fills in both: the nemesis's defaults, the cluster's.
func (p *plan) faultsAndServers(e lockimpl.Entry) error {
	var err error
	if p.nemesis, err = p.cfg.Nemesis.WithDefaults(); err != nil {
		return err
	}
	p.cfg.Cluster.ClockShim = p.cfg.Cluster.ClockShim || p.nemesis.Needs().Clock
	p.cfg.Cluster.External.Wait = e.Waits
	if err := p.nemesis.FitsBackend(cmp.Or(p.cfg.Cluster.Backend, cluster.Local)); err != nil {
		return err
	}
	if p.autoPrefix = p.cfg.Cluster.Backend == cluster.External && p.cfg.Cluster.External.KeyPrefix == ""; p.autoPrefix {
		// start names the prefix after the run dir; a stand-in is
		// checked here.
		p.cfg.Cluster.External.KeyPrefix = "lockcheck:"
	}
	if p.cfg.Cluster, err = p.cfg.Cluster.WithDefaults(); err != nil {
		return err
	}
	if err := p.nemesis.Fits(p.cfg.Cluster.Topology); err != nil {
		return err
	}
	if e.OwnClient {
		if err := p.nemesis.FitsOwnClient(e.Name, e.PerClient); err != nil {
			return err
		}
	}
	if p.nemesis.Seed == 0 {
		p.nemesis.Seed = p.workload.Seed
	}
	if usesPool(p.nemesis.Faults) && p.workload.PoolPerClient == 0 {
		// The pool fault takes a client's own pool: each client gets a
		// lock of its own, over two connections, unless told a size.
		p.workload.PoolPerClient = 2
		if _, err := p.workload.WithDefaults(); err != nil {
			return errors.New("--nemesis pool gives each client a mutex of its own (--pool-per-client 2): not with --permits, --readers, --reenter or --wait (drop one)")
		}
	}
	return nil
}

func configErr(err error) error { return workload.ConfigErr(err) }

// usesPool says whether faults have the pool fault, alone or composed
// (pool+kill-redis).
func usesPool(faults []string) bool {
	return slices.ContainsFunc(faults, func(f string) bool {
		return slices.Contains(strings.Split(f, "+"), nemesis.ClientPool)
	})
}

// infoHorizon is how long after it returned an indeterminate op may still
// take effect: the op timeout (a request can sit in a socket that long),
// plus the longest time a fault can hold Redis still, plus a second.
func infoHorizon(w workload.Config, n nemesis.Config, restartDelay time.Duration) time.Duration {
	h := w.OpTimeout + time.Second
	for _, f := range n.Faults {
		if k, _ := nemesis.Lookup(f); k.Redis {
			h = w.OpTimeout + time.Second + max(n.Duration, restartDelay)
			break
		}
	}
	return h
}

// Entry returns the lock under test: Factory, or the lock Lock names.
func (cfg *Config) Entry() (lockimpl.Entry, error) {
	if cfg.Factory != nil {
		return lockimpl.Entry{Name: cmp.Or(cfg.Lock, "custom"), Factory: cfg.Factory, Version: cfg.LockVersion}, nil
	}
	reg := cfg.Registry
	if reg == nil {
		reg = lockimpl.All()
	}
	return reg.Lookup(cmp.Or(cfg.Lock, "setnx"))
}

// recordedShape is the shape a run of e records for its check where its
// flags do not tell it (--permits, --readers, --reenter): one a registered
// checker.Shape knows only by name ("": the history's acquires tell it). A
// shape no checker judges is refused before the run.
func recordedShape(e lockimpl.Entry, w workload.Config) (string, error) {
	if e.Shape == "" || e.Shape == lockimpl.ShapeMutex || toJSON(w).Shape != "" {
		return "", nil
	}
	s, ok := checker.ShapeNamed(e.Shape)
	switch {
	case !ok:
		return "", fmt.Errorf("lock %s declares the shape %q, which no checker judges: register it (checker.RegisterShape) in the program that runs it", e.Name, e.Shape)
	case s.Of != nil:
		return "", nil
	}
	return e.Shape, nil
}

func toJSON(c workload.Config) report.RunWorkload {
	w := report.RunWorkload{Clients: c.Clients, Keys: c.Keys, KeyDist: c.KeyDist, Ops: c.Ops,
		Duration: c.Duration.String(), TTL: c.TTL.String(), Hold: c.Hold.String(), HoldDist: c.HoldDist,
		Retry: c.Retry, Think: c.Think.String(), OpTimeout: c.OpTimeout.String(), Margin: c.Margin.String(),
		SkipRelease: c.SkipRelease, TTLFactor: c.TTLFactor, Rate: c.Rate, PoolPerClient: c.PoolPerClient}
	if c.Policy.Kind != "" {
		w.Retry = c.Policy.String()
	}
	if c.ExtendEvery > 0 {
		w.ExtendEvery = c.ExtendEvery.String()
	}
	if c.Permits > 1 {
		w.Shape, w.Permits = "semaphore", c.Permits
	}
	if c.Wait > 0 {
		w.Wait = c.Wait.String()
	}
	if c.Readers > 0 {
		w.Shape, w.Readers = "rwlock", c.Readers
	}
	if c.Reenter > 0 {
		w.Shape, w.Reenter = "reentrant", c.Reenter
	}
	return w
}
