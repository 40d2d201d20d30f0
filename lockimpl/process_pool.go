package lockimpl

import (
	"context"
	"errors"
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
	// Start starts the clients' processes and waits until each answers:
	// before the run, and for a crashed client's successor, so that no
	// op is charged with a process's start-up.
	Start(clients ...int) error
}

// PerClientProcessEntry is the lock of --lock-cmd-per-client: one process
// per client, each as ProcessEntry's, started at the client's first call.
func PerClientProcessEntry(name, cmdline, topology string) Entry {
	e := ProcessEntry(name, cmdline, topology)
	e.PerClient = true
	e.Factory = func(env Env) (Locker, error) {
		return &ProcessPool{cmdline: cmdline, topology: topology, env: env, procs: map[int]*procSlot{}}, nil
	}
	return e
}

// ProcessPool is one lock process per client.
type ProcessPool struct {
	cmdline, topology string
	env               Env

	mu    sync.Mutex
	procs map[int]*procSlot
}

// procSlot is a client's process, started once.
type procSlot struct {
	once sync.Once
	done chan struct{} // closed once started (or failed to)
	p    *ProcessLock
	err  error
}

// slot returns the client's slot, made at first ask.
func (pp *ProcessPool) slot(client int) *procSlot {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	s := pp.procs[client]
	if s == nil {
		s = &procSlot{done: make(chan struct{})}
		pp.procs[client] = s
	}
	return s
}

// start starts the client's process if it has none yet, and waits until
// it answers.
func (pp *ProcessPool) start(client int) (*ProcessLock, error) {
	s := pp.slot(client)
	s.once.Do(func() {
		defer close(s.done)
		s.p, s.err = startProcess(pp.cmdline, pp.topology, pp.env, client)
	})
	return s.p, s.err
}

// Start implements ClientProcesses: the clients' processes, started side
// by side (at most startAtOnce at a time), each answering before Start
// returns.
func (pp *ProcessPool) Start(clients ...int) error {
	sem := make(chan struct{}, startAtOnce)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, errs[i] = pp.start(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startAtOnce bounds the lock processes starting at once.
const startAtOnce = 32

// proc returns the process of the client calling with ctx (started now
// if Start did not start it).
func (pp *ProcessPool) proc(ctx context.Context) (*ProcessLock, error) {
	return pp.start(ClientFrom(ctx))
}

// lookup returns the client's process if it has started.
func (pp *ProcessPool) lookup(client int) *ProcessLock {
	pp.mu.Lock()
	s := pp.procs[client]
	pp.mu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		return s.p
	default:
		return nil
	}
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
	pp.procs = map[int]*procSlot{}
	pp.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-s.done
			if s.p != nil {
				_ = s.p.Close()
			}
		}()
	}
	wg.Wait()
	return nil
}
