package lockimpl

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// ClientProcesses is implemented by a lock that runs one process per
// client (--lock-cmd-per-client): a pause stops the client's process,
// everything in it, as a real stop-the-world pause does, and a crash
// kills it.
type ClientProcesses interface {
	// Stop stops the client's process until resume is called.
	Stop(client int) (resume func())
	// Kill kills the client's process; its leases are never released.
	Kill(client int)
}

// PerClientProcessEntry is the lock of --lock-cmd-per-client: one process
// per client, each as ProcessEntry's, started at the client's first call.
func PerClientProcessEntry(name, cmdline, topology string) Entry {
	e := ProcessEntry(name, cmdline, topology)
	e.PerClient = true
	e.Factory = func(env Env) (Locker, error) {
		return &ProcessPool{cmdline: cmdline, topology: topology, env: env, procs: map[int]*ProcessLock{}}, nil
	}
	return e
}

// ProcessPool is one lock process per client.
type ProcessPool struct {
	cmdline, topology string
	env               Env

	mu     sync.Mutex
	procs  map[int]*ProcessLock
	closed bool
}

// proc returns the process of the client calling with ctx, started at
// its first call.
func (pp *ProcessPool) proc(ctx context.Context) (*ProcessLock, error) {
	id := ClientFrom(ctx)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if p := pp.procs[id]; p != nil {
		return p, nil
	}
	p, err := StartProcess(pp.cmdline, pp.topology, pp.env)
	if err != nil {
		return nil, err
	}
	pp.procs[id] = p
	return p, nil
}

func (pp *ProcessPool) lookup(client int) *ProcessLock {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.procs[client]
}

// Acquire implements Locker.
func (pp *ProcessPool) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	p, err := pp.proc(ctx)
	if err != nil {
		return Lease{}, err
	}
	return p.Acquire(ctx, key, ttl)
}

// Release implements Locker.
func (pp *ProcessPool) Release(ctx context.Context, l Lease) error {
	p, err := pp.proc(ctx)
	if err != nil {
		return err
	}
	return p.Release(ctx, l)
}

// Extend implements Locker.
func (pp *ProcessPool) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	p, err := pp.proc(ctx)
	if err != nil {
		return Lease{}, err
	}
	return p.Extend(ctx, l, ttl)
}

// Stop implements ClientProcesses: SIGSTOP to the process group, SIGCONT
// on resume.
func (pp *ProcessPool) Stop(client int) func() {
	p := pp.lookup(client)
	if p == nil {
		return func() {}
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGSTOP)
	return func() { _ = syscall.Kill(-p.PID(), syscall.SIGCONT) }
}

// Kill implements ClientProcesses: SIGKILL to the process group.
func (pp *ProcessPool) Kill(client int) {
	if p := pp.lookup(client); p != nil {
		p.killed.Store(true)
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Close ends every process.
func (pp *ProcessPool) Close() error {
	pp.mu.Lock()
	procs := pp.procs
	pp.procs = map[int]*ProcessLock{}
	pp.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Close() }()
	}
	wg.Wait()
	return nil
}
