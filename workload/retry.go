package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Retry kinds and jitters.
const (
	RetryNone    = "none"
	RetryFixed   = "fixed"
	RetryBackoff = "backoff"

	JitterFull  = "full"
	JitterEqual = "equal"
	JitterNone  = "none"
)

// The default policy (RetryBackoff alone): 50 ms doubling, capped at 1 s,
// full jitter, 5 attempts.
const (
	BackoffBase        = 50 * time.Millisecond
	BackoffCap         = time.Second
	BackoffMaxAttempts = 5
)

// RetryPolicy is how a client retries an acquire the key refused: after
// attempt a (from 0) it sleeps Delay(a), jittered, until Attempts attempts
// are spent (0: until it acquires or the run stops). Each attempt is an
// op of its own.
type RetryPolicy struct {
	Kind string
	// Base is the fixed delay, or the backoff's first.
	Base time.Duration
	// Cap bounds a backoff's delay.
	Cap      time.Duration
	Attempts int
	Jitter   string
}

// ParseRetry reads a --retry policy and its --retry-jitter:
//
//	none                  one attempt
//	fixed:DELAY[,N]       DELAY between attempts
//	backoff:BASE,CAP[,N]  BASE doubling per attempt, at most CAP
//	backoff               backoff:50ms,1s,5 (the default)
//
// N is the number of attempts, the first included; without it a client
// retries until it acquires or the run stops (the unbounded retry lock
// guides warn cascades under contention). jitter is full (uniform in
// [0, d)), equal (d/2 plus uniform in [0, d/2)) or none ("" is full).
func ParseRetry(s, jitter string) (RetryPolicy, error) {
	p := RetryPolicy{Jitter: jitter}
	if p.Jitter == "" {
		p.Jitter = JitterFull
	}
	if p.Jitter != JitterFull && p.Jitter != JitterEqual && p.Jitter != JitterNone {
		return p, fmt.Errorf("--retry-jitter %q: want full, equal or none", jitter)
	}
	kind, args, _ := strings.Cut(s, ":")
	bad := func(why string) (RetryPolicy, error) {
		return p, fmt.Errorf("--retry %q: %s (want none, fixed:DELAY[,N], backoff:BASE,CAP[,N] or backoff)", s, why)
	}
	p.Kind = kind
	var parts []string
	if args != "" {
		parts = strings.Split(args, ",")
	}
	var durs int
	switch kind {
	case RetryNone:
		if args != "" {
			return bad("none takes nothing")
		}
		p.Attempts = 1
		return p, nil
	case RetryBackoff:
		if s == RetryBackoff {
			return RetryPolicy{Kind: RetryBackoff, Base: BackoffBase, Cap: BackoffCap, Attempts: BackoffMaxAttempts, Jitter: p.Jitter}, nil
		}
		durs = 2
	case RetryFixed:
		durs = 1
	default:
		return bad("unknown kind " + strconv.Quote(kind))
	}
	if len(parts) < durs || len(parts) > durs+1 {
		return bad(fmt.Sprintf("%s takes %d duration(s) and an optional attempt count", kind, durs))
	}
	if why := p.setArgs(parts, durs); why != "" {
		return bad(why)
	}
	return p, nil
}

// setArgs sets the policy's durs durations (base, and cap) and optional
// attempt count from parts, or says what is wrong with them.
func (p *RetryPolicy) setArgs(parts []string, durs int) string {
	ds := make([]time.Duration, durs)
	for i := range ds {
		d, err := time.ParseDuration(parts[i])
		if err != nil || d <= 0 {
			return fmt.Sprintf("%q is not a positive duration", parts[i])
		}
		ds[i] = d
	}
	p.Base, p.Cap = ds[0], ds[durs-1]
	if p.Cap < p.Base {
		return "the cap is below the base"
	}
	if len(parts) > durs {
		n, err := strconv.Atoi(parts[durs])
		if err != nil || n < 1 {
			return fmt.Sprintf("attempts %q: want a count of at least 1", parts[durs])
		}
		p.Attempts = n
	}
	return ""
}

// String is the policy in ParseRetry's form, with every part spelled out.
func (p RetryPolicy) String() string {
	var s string
	switch p.Kind {
	case RetryNone:
		return RetryNone
	case RetryFixed:
		s = fmt.Sprintf("fixed:%v", p.Base)
	default:
		s = fmt.Sprintf("backoff:%v,%v", p.Base, p.Cap)
	}
	if p.Attempts > 0 {
		s += "," + strconv.Itoa(p.Attempts)
	}
	if p.Jitter != JitterFull {
		s += " jitter=" + p.Jitter
	}
	return s
}

// Delay is the sleep after attempt a (from 0), jittered with rng.
func (p RetryPolicy) Delay(a int, rng *rand.Rand) time.Duration {
	d := p.Base
	if p.Kind == RetryBackoff {
		d = p.Cap
		if a < 62 && p.Base<<a > 0 && p.Base<<a < p.Cap {
			d = p.Base << a
		}
	}
	switch p.Jitter {
	case JitterNone:
		return d
	case JitterEqual:
		return d/2 + time.Duration(rng.Int64N(int64(d-d/2)))
	}
	return time.Duration(rng.Int64N(int64(d)))
}

// more says whether a client that has made attempts attempts makes another.
func (p RetryPolicy) more(attempts int) bool { return p.Attempts == 0 || attempts < p.Attempts }
