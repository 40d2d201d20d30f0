// Package nemesis injects faults on a seeded schedule and records each
// start and stop in the history. Every fault is healed at the end of a run.
package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ctxwait"
	"github.com/lockcheck/lockcheck/internal/ext"
)

// Defaults of the schedule.
const (
	DefaultInterval = 4 * time.Second
	DefaultDuration = 2 * time.Second
)

// Clients is the client side of the faults, implemented by the workload.
type Clients interface {
	// Play arms f on f.N clients chosen by rng and returns their process
	// ids, or an error for a kind the clients do not play.
	Play(rng *rand.Rand, f ClientFault) ([]int, error)
	// HealClients disarms client faults not yet taken.
	HealClients()
}

// Agents is the agents' side of the faults, implemented by a coordinator
// of clients on many machines.
type Agents interface {
	// KillAgents SIGKILLs the agents that targets (AgentTargets) names,
	// chosen by rng, and returns their names (agent2).
	KillAgents(rng *rand.Rand, targets string) []string
	// ReviveAgents brings back the agents KillAgents killed: they rejoin
	// and play their clients again, under new process ids.
	ReviveAgents(ctx context.Context) error
}

// Env is what faults act on.
type Env struct {
	Cluster *cluster.Cluster
	Clients Clients
	// Agents is set when the clients are on agents (nil: in process).
	Agents Agents
	// AgentTargets picks the agents of faults on agents (Config).
	AgentTargets string
	// TTL of the workload: pause-client pauses longer than it.
	TTL time.Duration
	// RestartDelay is how long kill-redis keeps a node down (0: restart at
	// once).
	RestartDelay time.Duration
	// Window is how long each fault stays on (Config.Duration).
	Window time.Duration
	// Targets picks the nodes a fault on Redis nodes acts on
	// (Config.Targets).
	Targets string
}

// Fault is one kind of failure.
type Fault interface {
	// Start injects the fault on targets chosen by rng and names them.
	Start(ctx context.Context, rng *rand.Rand) ([]string, error)
	// Stop heals the fault. It is safe to call when the fault is not on.
	Stop(ctx context.Context) error
}

// Lasting is a Fault that decides how long it stays on (a negative Hold:
// for the window after all).
type Lasting interface {
	Hold() time.Duration
}

// Observer is a Fault that reads from the servers what happened in its
// window (checker's Redis-side coverage figures): Events, called after
// Stop, goes into the stop op, and starts the next window's count anew.
type Observer interface {
	Events() map[string]int64
}

// Retaker is an Observer whose history.LostRetaken comes with its grants: each
// lost lease's key and token, and when the node was heard setting the
// key again (At in Unix ns; Run puts it on the history's clock). Called
// after Stop, it starts the next window's anew.
type Retaker interface {
	Retaken() []history.Retake
}

// Healer is a Fault whose Stop goes on after the heal (a Retaker's wait
// for grants): Healed, called after Stop, is when the heal was done
// (zero: at Stop's return).
type Healer interface {
	Healed() time.Time
}

// Kind describes a fault for lockcheck list.
type Kind struct {
	Name        string
	Description string
	// Needs is what the fault needs of the run and acts on.
	Needs
	// Topologies, if set, are the only topologies the fault can act on.
	Topologies []string
	// New makes the fault for a run.
	New func(Env) (Fault, error)
}

// Needs is what a fault needs of a run, and what it acts on. Faults
// together (a+b, a schedule of several) need what any of them needs
// (Merge): a new requirement is a field here and a line in Merge.
type Needs struct {
	// Redis is set for faults that stall or break Redis (they widen the
	// window in which an indeterminate op may take effect).
	Redis bool
	// CrashesClients: the fault acts through the clients' go-redis hook,
	// which is installed only then (it runs before every command).
	CrashesClients bool
	// ClientProxies: the fault needs a proxy between clients and nodes.
	ClientProxies bool
	// Clients: the fault acts on clients (pauses them, crashes them).
	Clients bool
	// Clock: the fault shifts nodes' clocks (the nodes run under the
	// clock shim).
	Clock bool
	// Servers: the fault acts on the Redis servers themselves (stops,
	// kills, cuts or reconfigures them), so it needs a backend that runs
	// them: not an external Redis.
	Servers bool
	// Agents: the fault acts on agents (clients on other machines), so it
	// needs a run whose clients are on agents.
	Agents bool
}

// Merge is what n and o need together.
func (n Needs) Merge(o Needs) Needs {
	return Needs{Redis: n.Redis || o.Redis, CrashesClients: n.CrashesClients || o.CrashesClients,
		ClientProxies: n.ClientProxies || o.ClientProxies, Clients: n.Clients || o.Clients,
		Clock: n.Clock || o.Clock, Servers: n.Servers || o.Servers, Agents: n.Agents || o.Agents}
}

var added ext.Added[Kind]

// Register adds a fault to All from here on, until the func it
// returns unregisters it (a test's throwaway fault, a program's own that
// embeds lockcheck).
func Register(k Kind) (unregister func()) { return added.Add(k) }

// All returns every fault, by name, those Register added included.
// To add one: a file with its Fault and its Kind, and a line here.
func All() []Kind {
	ks := added.With([]Kind{
		pauseClientKind,
		killAgentKind,
		pauseHolderKind,
		crashClientKind,
		pauseRedisKind,
		failoverKind,
		partitionKind,
		latencyKind,
		lostReplyKind,
		clockKind,
		clockJumpKind,
		clockQuorumKind,
		killQuorumKind,
		clientPartitionKind,
		clientClockKind,
		cancelKind,
		starveKind,
		poolKind,
		dropUnlockKind,
		killRedisKind,
		reshardKind,
	})
	sort.Slice(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}

// Lookup returns the named fault kind; names joined by "+" are one fault
// that starts and stops them all together (compose).
func Lookup(name string) (Kind, error) {
	if strings.Contains(name, "+") {
		return compose(name)
	}
	var names []string
	for _, k := range All() {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return Kind{}, fmt.Errorf("unknown fault %q (known: %s; see lockcheck list)", name, strings.Join(names, ", "))
}

// Fits says why the faults cannot act on topology, if one cannot: a fault
// that cannot act would leave a run "valid" that never had its fault.
func (c Config) Fits(topology string) error {
	for _, f := range c.Faults {
		k, err := Lookup(f)
		if err != nil {
			return err
		}
		if len(k.Topologies) > 0 && !slices.Contains(k.Topologies, topology) {
			return fmt.Errorf("--nemesis %s needs --topology %s (this run: %s)", f, strings.Join(k.Topologies, " or "), topology)
		}
	}
	return nil
}

// FitsBackend says why the faults cannot act on backend, if one cannot:
// an external Redis meets only the faults that act on clients and on the
// path to it.
func (c Config) FitsBackend(backend string) error {
	if backend != cluster.External {
		return nil
	}
	for _, f := range c.Faults {
		if k, err := Lookup(f); err == nil && k.Servers {
			return fmt.Errorf("--nemesis %s acts on the Redis servers, which needs a backend that runs Redis: use --backend local or docker (an external Redis meets the client faults: %s)", f, strings.Join(ClientSide(), ", "))
		}
	}
	return nil
}

// ClientSide names the faults that need no control of the servers.
func ClientSide() []string {
	var names []string
	for _, k := range All() {
		if !k.Servers {
			names = append(names, k.Name)
		}
	}
	return names
}

// FitsOwnClient says why the faults cannot act on a lock that talks to
// Redis through a client of its own (lockimpl.Entry.OwnClient), if one
// cannot: a crash hook or a proxy in lockcheck's client would do nothing.
// A lock with a process per client (perClient) meets crashes: the
// process is killed.
func (c Config) FitsOwnClient(lock string, perClient bool) error {
	for _, f := range c.Faults {
		// A fault on the client proxies (latency, lost-reply) acts on the
		// wire every client dials, a lock's own among them: the addresses
		// it is given are the proxies'.
		if k, err := Lookup(f); err == nil && k.CrashesClients && !perClient {
			return fmt.Errorf("--nemesis %s acts inside lockcheck's own Redis client, which lock %s does not use (it has a client of its own); choose another fault (for crash-client: --lock-cmd-per-client)", f, lock)
		}
	}
	return nil
}

// ActsOnClients says whether a fault pauses or crashes clients.
func (c Config) ActsOnClients() bool {
	for _, f := range c.Faults {
		if k, _ := Lookup(f); k.Clients {
			return true
		}
	}
	return false
}

// Needs is what the schedule's faults need together: the clients' crash
// hook, proxies between clients and nodes, the clock shim on the nodes.
func (c Config) Needs() Needs {
	var n Needs
	for _, f := range c.Faults {
		k, _ := Lookup(f)
		n = n.Merge(k.Needs)
	}
	return n
}

// Config is a schedule: every Interval, one of Faults (chosen by the seed)
// is started and kept on for Duration (or as long as it says).
type Config struct {
	// Faults are fault names, or several joined by "+" (started and
	// stopped together).
	Faults   []string
	Interval time.Duration
	Duration time.Duration
	// Targets picks the nodes of faults on Redis nodes: one of Targets
	// ("": one); with ",agent:T" (or "agent:T" alone) the agents of faults
	// on agents, T one of AgentTargets, which WithDefaults moves to
	// AgentTargets.
	Targets      string
	AgentTargets string
	Seed         int64
	// Windows, if not nil, is the schedule as data (a plan's, lockcheck
	// run --plan): these windows and no others, each fault one of
	// Faults. Nil: the windows the seed derives (Schedule), without end.
	Windows []Window
}

// AgentTargets are the agent targets of --nemesis-targets (agent:one ...).
var AgentTargets = []string{"one", "minority", "all"}

// WithDefaults fills zero fields and checks the fault names.
func (c Config) WithDefaults() (Config, error) {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Interval < 0 || c.Duration < 0 {
		return c, fmt.Errorf("--nemesis-interval and --nemesis-duration must not be negative")
	}
	var nodes []string
	for _, t := range strings.Split(c.Targets, ",") {
		if a, ok := strings.CutPrefix(t, "agent:"); ok {
			if !slices.Contains(AgentTargets, a) {
				return c, fmt.Errorf("--nemesis-targets %q: want agent:one, agent:minority or agent:all", t)
			}
			c.AgentTargets = a
		} else if t != "" {
			nodes = append(nodes, t)
		}
	}
	if len(nodes) > 1 {
		return c, fmt.Errorf("--nemesis-targets %q: one node target, and at most one agent:...", c.Targets)
	}
	c.Targets = strings.Join(nodes, "")
	if c.Targets != "" && !slices.Contains(Targets, c.Targets) {
		return c, fmt.Errorf("--nemesis-targets %q: want one of %s (and agent:one, agent:minority or agent:all for faults on agents)", c.Targets, strings.Join(Targets, ", "))
	}
	for _, f := range c.Faults {
		if _, err := Lookup(f); err != nil {
			return c, err
		}
	}
	for _, w := range c.Windows {
		if !slices.Contains(c.Faults, w.Fault) || w.Start < 0 || w.Length < 0 {
			return c, fmt.Errorf("window %d (%s at %v for %v): want one of the run's faults (%s), a start and a length of 0 or more", w.ID, w.Fault, w.Start, w.Length, strings.Join(c.Faults, ", "))
		}
	}
	return c, nil
}

// Run runs the schedule until ctx ends, then heals whatever is on. Each
// start and stop is recorded as a nemesis op. A fault that fails to start
// is recorded with its error and the schedule goes on; Run returns the
// first error healing left behind.
func Run(ctx context.Context, cfg Config, env Env, record func(history.Op), now func() int64) error {
	if len(cfg.Faults) == 0 {
		return nil
	}
	faults := make([]Fault, len(cfg.Faults))
	for i, name := range cfg.Faults {
		k, err := Lookup(name)
		if err != nil {
			return err
		}
		if faults[i], err = k.New(env); err != nil {
			return fmt.Errorf("fault %s: %w", name, err)
		}
	}
	// A plan's window starts at its time, and no sooner than Interval
	// after the previous one healed; a derived one Interval after the
	// previous heal, as the schedule always ran (a fault that decides
	// its own hold, kill-redis's, is not spaced by Duration).
	start := now()
	healed := start // the first window Interval after the run began
	for i := 0; ; i++ {
		w, ok := cfg.window(i)
		if !ok {
			return nil
		}
		at := healed + int64(cfg.Interval)
		if cfg.Windows != nil {
			at = max(start+int64(w.Start), at)
		}
		if !ctxwait.Sleep(ctx, time.Duration(at-now())) {
			return nil
		}
		name, f := w.Fault, faults[slices.Index(cfg.Faults, w.Fault)]
		call := now()
		targets, err := f.Start(ctx, targetRNG(cfg.Seed, w.ID))
		recordOp(record, &history.NemesisValue{Fault: name, Phase: "start", Targets: targets}, call, now(), err)
		hold := w.Length
		if l, ok := f.(Lasting); ok && l.Hold() >= 0 {
			hold = l.Hold()
		}
		ctxwait.Sleep(ctx, hold)
		if err := heal(ctx, f, name, targets, record, now); err != nil {
			return err
		}
		healed = now()
	}
}

// heal stops fault f (name, on targets) and records the stop, with what
// the fault observed in its window.
func heal(ctx context.Context, f Fault, name string, targets []string, record func(history.Op), now func() int64) error {
	// Healing must happen even when the run is stopping.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	call := now()
	err := f.Stop(hctx)
	cancel()
	v := &history.NemesisValue{Fault: name, Phase: "stop", Targets: targets}
	if o, ok := f.(Observer); ok {
		v.Events = o.Events()
	}
	// The history's clock is time since the run began.
	offset := time.Now().UnixNano() - now()
	if r, ok := f.(Retaker); ok {
		v.Retaken = r.Retaken()
		for i := range v.Retaken {
			v.Retaken[i].At -= offset
		}
	}
	if h, ok := f.(Healer); ok {
		if at := h.Healed(); !at.IsZero() {
			v.Healed = max(call, min(at.UnixNano()-offset, now()))
		}
	}
	recordOp(record, v, call, now(), err)
	if err != nil {
		return fmt.Errorf("heal %s: %w", name, err)
	}
	return nil
}

func recordOp(record func(history.Op), v *history.NemesisValue, call, ret int64, err error) {
	op := history.Op{Process: history.NemesisProcess, F: history.Nemesis, Type: history.Info, Call: call, Return: ret, Value: v}
	if err != nil {
		op.Error = err.Error()
	}
	record(op)
}
