package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
)

// ErrConfig marks a user mistake (bad option, missing program, a lock
// that cannot be built): exit 2. harness.ErrConfig is the same value.
var ErrConfig = errors.New("configuration error")

// ConfigErr marks err as a user mistake.
func ConfigErr(err error) error { return fmt.Errorf("%w: %w", ErrConfig, err) }

// Players are how a run's clients are played: in this process (Local),
// or on agents on other machines (agent.Coordinator). The run drives
// them and the nemesis alike through this seam.
type Players interface {
	// Play runs the clients until the run ends.
	Play(ctx context.Context) error
	// Clients is the clients' side of the faults.
	Clients() nemesis.Clients
	// Agents is the agents' side of the faults (nil: no agents).
	Agents() nemesis.Agents
	// Finish ends the clients once Play returned and the faults are
	// healed.
	Finish()
	// Unrecorded is what the clients counted that the history lacks.
	Unrecorded() history.Unrecorded
	// Scope says why the lock's leases are scopes (lockimpl.Scoped), or
	// "" if they are leases or the players cannot tell.
	Scope() string
	// OwnTimeout is the lock's own command timeout, if it declares one
	// (lockimpl.OwnTimeouter; 0: none, or the players cannot tell).
	OwnTimeout() time.Duration
	// Account is run.json's account of the agents and which were lost
	// (nil, nil: no agents), read once Finish returned.
	Account() ([]report.RunAgent, []string)
}

// Local are clients in this process: runner's, through locker.
type Local struct {
	Runner *Runner
	Locker lockimpl.Locker
}

// Play runs the clients.
func (p *Local) Play(ctx context.Context) error { return p.Runner.Run(ctx, p.Locker) }

// Clients is the runner.
func (p *Local) Clients() nemesis.Clients { return p.Runner }

// Agents is nil: no agents.
func (p *Local) Agents() nemesis.Agents { return nil }

// Finish closes the lock.
func (p *Local) Finish() { lockimpl.Close(p.Locker) }

// Unrecorded is the runner's counters.
func (p *Local) Unrecorded() history.Unrecorded { return p.Runner.Counters().Snapshot() }

// Scope is the lock's.
func (p *Local) Scope() string { return lockimpl.ScopeOf(p.Locker) }

// OwnTimeout is the lock's.
func (p *Local) OwnTimeout() time.Duration { return lockimpl.OwnTimeoutOf(p.Locker) }

// Account is nil: no agents.
func (p *Local) Account() ([]report.RunAgent, []string) { return nil, nil }

// BuildLock builds the lock named name with factory for runner's clients
// (in this process or an agent's): their side of the faults in env, its
// processes started, wrap (if set) around it and the watchdog
// (--extend-every) around that.
func BuildLock(factory lockimpl.Factory, name string, env lockimpl.Env, runner *Runner, w Config, crashes bool, wrap func(lockimpl.Locker) lockimpl.Locker) (lockimpl.Locker, error) {
	runner.Instrument(&env, crashes)
	env.Permits = w.Permits
	if w.PoolPerClient > 0 {
		factory = runner.pooledFactory(factory, w.Clients)
	}
	locker, err := factory(env)
	if err != nil {
		err = fmt.Errorf("lock %s: %w", name, err)
		if errors.Is(err, lockimpl.ErrBadLock) {
			err = ConfigErr(err)
		}
		return nil, err
	}
	if k := max(w.Permits, 1); lockimpl.PermitsOf(locker) != k {
		lockimpl.Close(locker)
		return nil, ConfigErr(fmt.Errorf("lock %s has %d permits a key, not --permits %d: more than one needs a semaphore (lockcheck list)", name, lockimpl.PermitsOf(locker), k))
	}
	if err := readersIn(locker, name, w.Readers); err != nil {
		lockimpl.Close(locker)
		return nil, err
	}
	if err := runner.reenterIn(locker, name, w.Reenter); err != nil {
		lockimpl.Close(locker)
		return nil, err
	}
	if err := runner.waitIn(locker, name, w.Wait); err != nil {
		lockimpl.Close(locker)
		return nil, err
	}
	if err := StartProcesses(locker, w.Clients); err != nil {
		lockimpl.Close(locker)
		return nil, ConfigErr(fmt.Errorf("lock %s: %w", name, err))
	}
	if wrap != nil {
		locker = wrap(locker)
	}
	if w.ExtendEvery > 0 {
		locker = lockimpl.NewWatchdog(locker, w.ExtendEvery, env)
	}
	return locker, nil
}

// StartProcesses starts a lock's process per client, if it runs them,
// before the run's ops: a process's start-up is charged to no op.
func StartProcesses(locker lockimpl.Locker, clients int) error {
	procs, ok := locker.(lockimpl.ClientProcesses)
	if !ok {
		return nil
	}
	ids := make([]int, clients)
	for i := range ids {
		ids[i] = i
	}
	return procs.Start(ids...)
}
