// Package workload drives N concurrent clients through a Locker: acquire,
// critical section on the protected resource, release, think; every
// operation recorded.
package workload

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Defaults for a zero Config field.
const (
	DefaultClients   = 100
	DefaultKeys      = 10
	DefaultTTL       = time.Second
	DefaultHold      = 100 * time.Millisecond
	DefaultOpTimeout = 2 * time.Second
	DefaultDuration  = 20 * time.Second
)

// Key distributions and hold distributions.
const (
	KeyUniform = "uniform"
	KeyZipf    = "zipf"

	HoldFixed   = "fixed"
	HoldExp     = "exp"
	HoldUniform = "uniform"
)

// Config is one workload. Zero fields take the defaults above.
type Config struct {
	Clients int
	Keys    int
	KeyDist string
	// KeyPrefix goes before every lock key (KeyName); the external
	// backend sets it, so that a run touches only keys under it.
	KeyPrefix string
	// Rate, if set, is an open-model arrival rate of acquire attempts per
	// second, run by a pool of Clients workers (runOpen): one attempt per
	// arrival, whatever the retry policy.
	Rate float64
	// Ops bounds the number of acquire attempts (0: no bound).
	Ops int64
	// Duration bounds the run (0: DefaultDuration, unless Ops is set).
	Duration time.Duration
	TTL      time.Duration
	// Hold is the mean time a client wants the lock for; HoldDist shapes
	// it. Zero is no hold at all (a pure acquire/release load), not
	// DefaultHold, which is the CLI's default.
	Hold     time.Duration
	HoldDist string
	// Retry is the acquire retry policy (ParseRetry; "": backoff) and
	// RetryJitter its jitter ("": full); WithDefaults reads them into
	// Policy.
	Retry       string
	RetryJitter string
	Policy      RetryPolicy
	// SkipRelease is the fraction of critical sections that end without a
	// release, as code that returns early on an error never reaches its
	// unlock: the lease is held until its TTL runs out.
	SkipRelease float64
	// TTLFactor is the factor of the TTL advice's p99 rule (0: 3); the
	// workload only records it.
	TTLFactor float64
	Think     time.Duration
	Seed      int64
	// OpTimeout bounds each Redis operation; one that runs out is "info".
	OpTimeout time.Duration
	// ExtendEvery, if set, puts the lock under a client-side watchdog
	// that extends each lease by the TTL at this interval until release
	// (lockimpl.Watchdog), so that the lock's extend is exercised.
	ExtendEvery time.Duration
	// Margin is how long before its lease's deadline a client leaves the
	// critical section (0: 5ms + 10% of the TTL), to absorb timer and
	// scheduling delay on a loaded machine.
	Margin time.Duration
	// SoloKeys, if set, gives each of the first SoloKeys clients a key of
	// its own, which no other client locks, and stops it (its lock's
	// background work and lock process included) for 1.5x the TTL in the
	// middle of every other critical section: its overdue extend then
	// lands on a key that is free, and its release after it too
	// (late_extend_free, late_release_free), the events an ownership check
	// on extend and release exists for, produced on purpose rather than
	// left to a pause that happens to find a holder no one contends. One
	// client at least always shares the keys.
	SoloKeys int
	// Permits is the permits each key has (--permits; 0 or 1: one, a
	// mutex): more than one runs only a semaphore (lockimpl.Permitter),
	// and every acquire records it (history.Op.Permits).
	Permits int
	// PoolPerClient, if set, gives each client a lock of its own whose
	// Redis client has a pool of this many connections (the pool fault
	// takes them); 0: one lock for all the clients, as a process serving
	// them all would have.
	PoolPerClient int
	// Readers is the chance an acquire is a read (--readers; 0: a
	// mutex's run): more than 0 runs only a read-write lock
	// (lockimpl.ReadWriter), and every acquire records its mode
	// (history.Op.Access).
	Readers float64
	// Wait, if set, is how long each acquire may wait inside the lock
	// (--wait): only a lock that can (lockimpl.Waiter) runs with it, and
	// each acquire records it with the lock's wake-up bound
	// (history.Op.WaitMs, WakeMs).
	Wait time.Duration
	// Reenter, if set, is the depth each holder re-enters to (--reenter
	// N): only a reentrant lock (lockimpl.Reenterer) runs with it, and
	// every acquire records its depth (history.Op.Depth).
	Reenter int
	// Streams, if set, names each client's random stream, one a client
	// (client i draws from stream Streams[i]; nil: from stream i): a
	// plan that drops clients (lockcheck shrink) keeps the others'
	// draws as they were.
	Streams []int
}

// solo is how many clients have keys of their own (SoloKeys, leaving one
// client at least on the shared keys).
func (c Config) solo() int { return max(min(c.SoloKeys, c.Clients-1), 0) }

// WithDefaults fills zero fields and checks the rest.
func (c Config) WithDefaults() (Config, error) {
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.KeyDist == "" {
		c.KeyDist = KeyUniform
	}
	if c.Duration == 0 && c.Ops == 0 {
		c.Duration = DefaultDuration
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.HoldDist == "" {
		c.HoldDist = HoldExp
	}
	if c.Retry == "" {
		c.Retry = RetryBackoff
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.Margin == 0 {
		c.Margin = 5*time.Millisecond + c.TTL/10
	}
	p, err := ParseRetry(c.Retry, c.RetryJitter)
	c.Policy = p
	return c, errors.Join(err, c.validate())
}

// validate says what is wrong with c's values, all of it at once.
func (c Config) validate() error {
	var errs []error
	if c.Clients < 1 {
		errs = append(errs, fmt.Errorf("--clients %d: want at least 1", c.Clients))
	}
	if c.Keys < 1 {
		errs = append(errs, fmt.Errorf("--keys %d: want at least 1", c.Keys))
	}
	if c.KeyDist != KeyUniform && c.KeyDist != KeyZipf {
		errs = append(errs, fmt.Errorf("--key-dist %q: want uniform or zipf", c.KeyDist))
	}
	if c.HoldDist != HoldFixed && c.HoldDist != HoldExp && c.HoldDist != HoldUniform {
		errs = append(errs, fmt.Errorf("--hold-dist %q: want fixed, exp or uniform", c.HoldDist))
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate > 1e6 {
		errs = append(errs, fmt.Errorf("--rate %v: want attempts per second, up to 1000000", c.Rate))
	}
	if c.SkipRelease < 0 || c.SkipRelease > 1 {
		errs = append(errs, fmt.Errorf("--skip-release %v: want a fraction from 0 to 1", c.SkipRelease))
	}
	if c.TTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("--ttl %v: want at least 1ms (Redis PX is in milliseconds)", c.TTL))
	}
	if c.Ops < 0 || c.Duration < 0 || c.Hold < 0 || c.Think < 0 || c.OpTimeout < 0 || c.Margin < 0 {
		errs = append(errs, errors.New("--ops, --duration, --hold, --think and --op-timeout must not be negative"))
	}
	if c.ExtendEvery < 0 || (c.ExtendEvery > 0 && c.ExtendEvery >= c.TTL) {
		errs = append(errs, fmt.Errorf("--extend-every %v: want more than 0 and less than the TTL %v (a third of it is usual)", c.ExtendEvery, c.TTL))
	}
	errs = append(errs, c.validatePool())
	if c.Permits < 0 || c.Permits > history.MaxPermits {
		errs = append(errs, fmt.Errorf("--permits %d: want 1 to %d", c.Permits, history.MaxPermits))
	}
	if err := c.validateReaders(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateWait(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateReenter(); err != nil {
		errs = append(errs, err)
	}
	if c.Streams != nil && len(c.Streams) != c.Clients {
		errs = append(errs, fmt.Errorf("client streams: %d for %d clients, want one a client", len(c.Streams), c.Clients))
	}
	if c.SoloKeys < 0 {
		errs = append(errs, fmt.Errorf("solo keys %d: want 0 or more", c.SoloKeys))
	}
	if c.TTLFactor < 0 {
		errs = append(errs, fmt.Errorf("--ttl-factor %v: want more than 0", c.TTLFactor))
	}
	if c.Margin >= c.TTL {
		errs = append(errs, fmt.Errorf("margin %v: want less than the TTL %v", c.Margin, c.TTL))
	}
	return errors.Join(errs...)
}

// validateWait says what is wrong with --wait: a blocking acquire's
// lease is the lock's from its grant, which the client-side watchdog
// (--extend-every), wrapping Acquire, does not see.
// validatePool says what is wrong with PoolPerClient, if anything.
func (c Config) validatePool() error {
	switch {
	case c.PoolPerClient < 0:
		return fmt.Errorf("--pool-per-client %d: want 0 (one lock for all the clients) or more", c.PoolPerClient)
	case c.PoolPerClient > 0 && (c.Permits > 1 || c.Readers > 0 || c.Reenter > 0 || c.Wait > 0):
		return fmt.Errorf("--pool-per-client %d gives each client a mutex of its own: not with --permits, --readers, --reenter or --wait (drop one)", c.PoolPerClient)
	}
	return nil
}

func (c Config) validateWait() error {
	switch {
	case c.Wait < 0 || c.Wait.Milliseconds() > history.MaxTTLms:
		return fmt.Errorf("--wait %v: want 0 (no blocking acquire) to %v", c.Wait, time.Duration(history.MaxTTLms)*time.Millisecond)
	case c.Wait > 0 && c.Wait < time.Millisecond:
		return fmt.Errorf("--wait %v: want at least 1ms (the history records it in ms)", c.Wait)
	case c.Wait > 0 && c.ExtendEvery > 0:
		return fmt.Errorf("--wait %v with --extend-every %v: a blocking acquire runs without the client-side watchdog; drop one", c.Wait, c.ExtendEvery)
	}
	return nil
}
