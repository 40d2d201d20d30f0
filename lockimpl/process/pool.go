package process

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// PerClientEntry is the lock of --lock-cmd-per-client: one process
// per client, each as Entry's, started at the client's first call.
// Client 0's, which every run starts first (workload.StartProcesses),
// is started at once: its ping's reply says the lock's shape, and so
// which capabilities the pool has (a read-write lock's is a
// lockimpl.ReadWriter).
func PerClientEntry(name, cmdline, topology string) lockimpl.Entry {
	e := Entry(name, cmdline, topology)
	e.PerClient = true
	e.Factory = func(env lockimpl.Env) (lockimpl.Locker, error) {
		pp := &Pool{cmdline: cmdline, topology: topology, env: env, procs: map[int]*procSlot{}}
		first, err := pp.start(0)
		if err != nil {
			_ = pp.Close()
			return nil, err
		}
		if first.Shape() == ShapeRWLock {
			return rwPool{pp}, nil
		}
		return pp, nil
	}
	return e
}

// Pool is one lock process per client.
type Pool struct {
	cmdline, topology string
	env               lockimpl.Env

	mu    sync.Mutex
	procs map[int]*procSlot
}

// procSlot is a client's process, started once.
type procSlot struct {
	once sync.Once
	done chan struct{} // closed once started (or failed to)
	p    *Lock
	err  error
}

// slot returns the client's slot, made at first ask.
func (pp *Pool) slot(client int) *procSlot {
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
func (pp *Pool) start(client int) (*Lock, error) {
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
func (pp *Pool) Start(clients ...int) error {
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
func (pp *Pool) proc(ctx context.Context) (*Lock, error) {
	return pp.start(lockimpl.ClientFrom(ctx))
}

// lookup returns the client's process if it has started.
func (pp *Pool) lookup(client int) *Lock {
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

// Acquire implements lockimpl.Locker.
func (pp *Pool) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	p, err := pp.proc(ctx)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	return p.Acquire(ctx, key, ttl)
}

// AcquireWait implements lockimpl.Waiter through the client's process.
func (pp *Pool) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (lockimpl.Lease, error) {
	p, err := pp.proc(ctx)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	return p.AcquireWait(ctx, key, ttl, wait)
}

// WakeBound implements lockimpl.Waiter, as the clients' processes said
// (the first one started).
func (pp *Pool) WakeBound() time.Duration {
	if p := pp.started(); p != nil {
		return p.WakeBound()
	}
	return 0
}

// CanWait says whether the clients' processes declared a wake-up bound
// (lockimpl.WaiterOf).
func (pp *Pool) CanWait() bool { return pp.WakeBound() > 0 }

// Permits implements lockimpl.Permitter, as the clients' processes said
// (the first one started).
func (pp *Pool) Permits() int {
	if p := pp.started(); p != nil {
		return p.Permits()
	}
	return 1
}

// rwPool is the processes of a read-write lock, one per client.
type rwPool struct{ *Pool }

// Acquire implements lockimpl.Locker: in the mode ctx names
// (lockimpl.AccessOf), a write if none.
func (pp rwPool) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	return pp.AcquireIn(ctx, key, ttl, lockimpl.AccessOf(ctx))
}

// AcquireIn implements lockimpl.ReadWriter.
func (pp rwPool) AcquireIn(ctx context.Context, key string, ttl time.Duration, access string) (lockimpl.Lease, error) {
	if err := lockimpl.CheckAccess(access); err != nil {
		return lockimpl.Lease{}, err
	}
	p, err := pp.proc(ctx)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	return p.acquireIn(ctx, key, ttl, access)
}

// WritersPreferred implements lockimpl.ReadWriter, as the clients'
// processes said.
func (pp rwPool) WritersPreferred() bool {
	p := pp.started()
	return p != nil && p.WritersPreferred()
}

// Release implements lockimpl.Locker.
func (pp *Pool) Release(ctx context.Context, l lockimpl.Lease) error {
	p, err := pp.proc(ctx)
	if err != nil {
		return err
	}
	return p.Release(ctx, l)
}

// Extend implements lockimpl.Locker.
func (pp *Pool) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	p, err := pp.proc(ctx)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	return p.Extend(ctx, l, ttl)
}

// Stop implements ClientProcesses: SIGSTOP to the process group, SIGCONT
// on resume.
func (pp *Pool) Stop(client int) func() {
	p := pp.lookup(client)
	if p == nil {
		return func() {}
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGSTOP)
	return func() { _ = syscall.Kill(-p.PID(), syscall.SIGCONT) }
}

// Kill implements ClientProcesses: SIGKILL to the process group.
func (pp *Pool) Kill(client int) {
	if p := pp.lookup(client); p != nil {
		p.killed.Store(true)
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Close ends every process.
func (pp *Pool) Close() error {
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

// started is a client's process that has answered, if any.
func (pp *Pool) started() *Lock {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, s := range pp.procs {
		select {
		case <-s.done:
			if s.p != nil {
				return s.p
			}
		default:
		}
	}
	return nil
}

// Scope implements lockimpl.Scoped: what the clients' processes said of
// their leases (the first one started).
func (pp *Pool) Scope() string {
	if p := pp.started(); p != nil {
		return p.Scope()
	}
	return ""
}

// OwnTimeout implements lockimpl.OwnTimeouter, as the clients' processes
// said.
func (pp *Pool) OwnTimeout() time.Duration {
	if p := pp.started(); p != nil {
		return p.OwnTimeout()
	}
	return 0
}

// KeyTTL implements lockimpl.KeyTTLer, as the clients' processes said.
func (pp *Pool) KeyTTL(ttl time.Duration) time.Duration {
	if p := pp.started(); p != nil {
		return p.KeyTTL(ttl)
	}
	return ttl
}
