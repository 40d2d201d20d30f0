// Package lockimpl holds the Locker interface and every lock implementation
// under test, each registered by name.
package lockimpl

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

// ErrNotAcquired means the lock is held by another owner: a definite failure.
var ErrNotAcquired = errors.New("lock held by another owner")

// ErrNotHeld means the lease is no longer held: a definite failure.
var ErrNotHeld = errors.New("lease not held")

// ErrNotSent means the operation never reached Redis (the connection was
// refused, the pool had no connection): it did not happen and says nothing
// about the lock. Locks return it only when their first command was not
// sent.
var ErrNotSent = errors.New("not sent")

// ErrUndone means an acquisition attempt reached no majority either way
// and gave back what it had taken (a Redlock split vote): the lock was
// neither held by us nor, as far as anyone can tell, by another. Like
// ErrNotSent, it says nothing about the lock and is counted, not
// recorded; recorded as a definite failure it would claim a holder that
// need not exist.
var ErrUndone = errors.New("no majority either way; undone")

// ErrNoOutcome means the lock's call returned without saying how it ended
// (a library that ignores its script's answer): indeterminate, but it
// took effect by its return if at all, so it is recorded info with no
// info horizon (history.Op.Answered). A call that timed out or lost its
// connection is not one: its command may still land after.
var ErrNoOutcome = errors.New("returned without its outcome")

// ErrBadLock marks a fault of the lock under test as a program, not as a
// lock: a spec script whose reply means nothing, a lock process that died
// or wrote nonsense. It stops the run; the CLI exits 2 with the message.
var ErrBadLock = errors.New("lock under test misbehaved")

// A Lease is one successful acquisition.
type Lease struct {
	Key      string
	Token    string        // unique per acquisition attempt
	Fence    int64         // fencing token, 0 if the lock issues none
	Acquired time.Duration // history clock when Acquire was called
	TTL      time.Duration
	// Watch is set by locks that keep their lease alive in the background
	// (watchdog); nil otherwise.
	Watch *Watch
	// Handle is the lock's own record of the lease, for adapters over
	// libraries that hand out a lock object (redislock).
	Handle any
}

// Deadline returns the history-clock time by which the lease may have
// expired: the last successful acquire or extend call plus its TTL.
func (l Lease) Deadline() time.Duration {
	if l.Watch != nil {
		return time.Duration(l.Watch.deadline.Load())
	}
	return l.Acquired + l.TTL
}

// Locker is a distributed lock under test. It is safe for concurrent use.
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	Release(ctx context.Context, l Lease) error
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
}

// Closer is implemented by Lockers that hold connections or goroutines.
type Closer interface {
	Close() error
}

// Close closes l if it is a Closer.
func Close(l Locker) {
	if c, ok := l.(Closer); ok {
		_ = c.Close()
	}
}

// Watch reports on a lease that its Locker keeps alive in the background.
type Watch struct {
	deadline atomic.Int64 // history clock ns
	lost     chan struct{}
	lostOnce sync.Once
	err      error // why it was lost; set before lost is closed
}

func newWatch(deadline time.Duration) *Watch {
	w := &Watch{lost: make(chan struct{})}
	w.deadline.Store(int64(deadline))
	return w
}

// Lost is closed when the lock can no longer vouch for the lease: the holder
// must leave its critical section.
func (w *Watch) Lost() <-chan struct{} { return w.lost }

// Err says why the lease was lost, once Lost is closed.
func (w *Watch) Err() error {
	select {
	case <-w.lost:
		return w.err
	default:
		return nil
	}
}

// NewScope is the Watch of a lease that the lock keeps for as long as it
// can and takes back when it cannot (a context the library cancels):
// no deadline the holder could read, so the holder stays in its section
// until it is done or Lose is called.
func NewScope() *Watch { return newWatch(time.Duration(history.MaxTime)) }

// Lose says the lock let the lease go (err says why): the holder must
// leave its critical section. Only the first call counts.
func (w *Watch) Lose(err error) { w.markLost(err) }

// Scoped is implemented by a lock whose leases are scopes (NewScope),
// not a token and a deadline: the lease contract cannot be judged, only
// mutual exclusion at the resource. Scope says why, in a line for the
// report; "" means the lock's leases are leases after all.
type Scoped interface {
	Scope() string
}

// OwnTimeouter is implemented by a lock whose Redis client gives up on a
// command after a timeout of its own (a socket timeout, as applications
// set one), not lockcheck's op timeout: a Redis stalled for less than it
// ends none of its ops indeterminate, so verify stretches its stalls past
// it. OwnTimeout is that timeout (0: it has none of its own).
type OwnTimeouter interface {
	OwnTimeout() time.Duration
}

// OwnTimeoutOf is l's own command timeout, if it declares one.
func OwnTimeoutOf(l Locker) time.Duration {
	if o, ok := l.(OwnTimeouter); ok {
		return o.OwnTimeout()
	}
	return 0
}

// ScopeOf is why l's lease contract cannot be judged, or "".
func ScopeOf(l Locker) string {
	if s, ok := l.(Scoped); ok {
		return s.Scope()
	}
	return ""
}

func (w *Watch) markLost(err error) {
	w.lostOnce.Do(func() {
		w.err = err
		close(w.lost)
	})
}

// Env is what a Locker factory gets: where Redis is, and the run's clock and
// recorder for operations the lock makes on its own (watchdog extensions).
type Env struct {
	Addrs []string
	// Username and Password authenticate (Username "": the default
	// user); SentinelPassword the sentinels, if they want one.
	Username, Password, SentinelPassword string
	// TLS, if set, is the clients' TLS configuration; a dialer checks the
	// server name of the address it was asked for, not of a proxy.
	TLS *tls.Config
	// PoolSize is the connection pool per node; at least the client count.
	PoolSize int
	// OpTimeout bounds each command by socket deadlines (go-redis read,
	// write and pool timeouts), so callers need no per-call context timer.
	OpTimeout time.Duration
	// Topology is the run's topology (cluster.Single, ...).
	Topology string
	// StartTimeout bounds a lock process's start-up, until it answers its
	// first request (0: process.StartTimeout).
	StartTimeout time.Duration
	// Say, if set, takes a line for the user while the run gets ready (a
	// lock process slow to answer its first request).
	Say func(string)
	// Now reads the history clock (ns since the run started).
	Now func() int64
	// ClientLag, if set, is how far behind the true time the calling
	// client's own clock is now (the client-clock fault skews it; 0
	// otherwise): a lock that reads its client's clock reads time.Now
	// less it (ClientTime).
	ClientLag func(ctx context.Context) time.Duration
	// Record appends an op to the history. Locks call it only for
	// operations the workload does not see.
	Record func(history.Op)
	// Hooks are added to every go-redis client the lock makes (faults such
	// as crash-client act through them).
	Hooks []redis.Hook
	// Wait, if set, blocks while the client whose ctx it gets is stopped
	// by a fault (a stop-the-world pause stops its watchdog too). A lock's
	// background work calls it before each step, with a context derived
	// from the client's (context.WithoutCancel keeps what Wait reads).
	Wait func(ctx context.Context)
	// Sentinels and MasterName are set in the sentinel topology: clients
	// find the master through Sentinel (go-redis failover client).
	Sentinels  []string
	MasterName string
	// Cluster is set in the cluster topology: clients use go-redis's
	// cluster client, seeded with Addrs.
	Cluster bool
	// resend gives the client go-redis's default retries (broken-resend).
	resend bool
	// master: a client of one of a Redlock's masters (nodeClients).
	master bool
	// KeyPrefix is the prefix of every lock key (external Redis): a lock
	// that adds keys of its own keeps them under it.
	KeyPrefix string
	// DialAddr maps an address Redis or Sentinel announced to the one to
	// dial (nil: the same).
	DialAddr func(addr string) string
	// Announced are the addresses Redis or Sentinel may announce that
	// DialAddr maps elsewhere: a lock process is given the map in its
	// environment (LOCKCHECK_DIAL_MAP), as it cannot call DialAddr.
	Announced []string
	// Permits is the permits a key of a semaphore (Permitter) has, as
	// the run asks (--permits; 0 or 1: one, a mutex). Other locks ignore
	// it.
	Permits int
	// Pool, if set, is the exact size of each connection pool the lock's
	// clients have (the pool fault: a client's few connections that the
	// application's own traffic can take), where PoolSize is a floor;
	// OnClient, if set, is given each client the lock makes on a single
	// node (not a cluster's), for that traffic to go through.
	Pool     int
	OnClient func(redis.UniversalClient)
	// Steady says no connection can go stale under the run: Redis is one
	// the harness started (no idle timeout) and no fault kills, restarts,
	// pauses or cuts it off. The clients then skip go-redis's health check
	// of a connection taken from the pool (a MSG_PEEK recvfrom and two
	// deadline resets per command), which finds the dead connections a
	// fault leaves.
	Steady bool
}

type clientKey struct{}

// WithClient tags ctx with the client (history process) making a call.
func WithClient(ctx context.Context, id int) context.Context {
	return context.WithValue(ctx, clientKey{}, id)
}

// ClientFrom returns the client id in ctx, or -2 if there is none.
func ClientFrom(ctx context.Context) int {
	if id, ok := ctx.Value(clientKey{}).(int); ok {
		return id
	}
	return -2
}

// Outcome classifies a Locker error into the history type it records.
func Outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, ErrNotAcquired), errors.Is(err, ErrNotHeld):
		return history.Fail
	default:
		return history.Info
	}
}

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
