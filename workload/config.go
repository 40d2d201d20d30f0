// Package workload drives N concurrent clients through a Locker: acquire,
// critical section on the protected resource, release, think; every
// operation recorded.
package workload

import (
	"errors"
	"fmt"
	"time"
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

// Key distributions, hold distributions and retry policies.
const (
	KeyUniform = "uniform"
	KeyZipf    = "zipf"

	HoldFixed   = "fixed"
	HoldExp     = "exp"
	HoldUniform = "uniform"

	RetryNone    = "none"
	RetryBackoff = "backoff"
)

// Backoff policy: base doubling per attempt, full jitter, bounded attempts.
const (
	BackoffBase        = 50 * time.Millisecond
	BackoffMaxAttempts = 5
)

// Config is one workload. Zero fields take the defaults above.
type Config struct {
	Clients int
	Keys    int
	KeyDist string
	// KeyPrefix goes before every lock key (KeyName); the external
	// backend sets it, so that a run touches only keys under it.
	KeyPrefix string
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
	Retry    string
	Think    time.Duration
	Seed     int64
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
}

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
	if c.Retry != RetryNone && c.Retry != RetryBackoff {
		errs = append(errs, fmt.Errorf("--retry %q: want none or backoff", c.Retry))
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
	if c.Margin >= c.TTL {
		errs = append(errs, fmt.Errorf("margin %v: want less than the TTL %v", c.Margin, c.TTL))
	}
	return c, errors.Join(errs...)
}
