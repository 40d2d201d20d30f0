package workload

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseRetry(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in, jitter string
		want       RetryPolicy
		str        string
	}{
		{"none", "", RetryPolicy{Kind: RetryNone, Attempts: 1, Jitter: JitterFull}, "none"},
		{"backoff", "", RetryPolicy{Kind: RetryBackoff, Base: 50 * ms, Cap: time.Second, Attempts: 5, Jitter: JitterFull}, "backoff:50ms,1s,5"},
		{"fixed:100ms,3", "equal", RetryPolicy{Kind: RetryFixed, Base: 100 * ms, Cap: 100 * ms, Attempts: 3, Jitter: JitterEqual}, "fixed:100ms,3 jitter=equal"},
		{"fixed:10ms", "none", RetryPolicy{Kind: RetryFixed, Base: 10 * ms, Cap: 10 * ms, Jitter: JitterNone}, "fixed:10ms jitter=none"},
		{"backoff:20ms,500ms,8", "full", RetryPolicy{Kind: RetryBackoff, Base: 20 * ms, Cap: 500 * ms, Attempts: 8, Jitter: JitterFull}, "backoff:20ms,500ms,8"},
		{"backoff:20ms,500ms", "", RetryPolicy{Kind: RetryBackoff, Base: 20 * ms, Cap: 500 * ms, Jitter: JitterFull}, "backoff:20ms,500ms"},
	} {
		got, err := ParseRetry(tc.in, tc.jitter)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseRetry(%q, %q) = %+v %q, %v; want %+v %q", tc.in, tc.jitter, got, got.String(), err, tc.want, tc.str)
		}
		// String reads back as the same policy.
		s, j, _ := strings.Cut(got.String(), " jitter=")
		if again, err := ParseRetry(s, j); err != nil || again != got {
			t.Errorf("ParseRetry(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
	for in, why := range map[string]string{
		"sometimes": "unknown kind", "none:1": "none takes nothing", "fixed": "takes 1 duration", "fixed:-5ms": "not a positive duration",
		"fixed:5ms,0": "at least 1", "backoff:1s,10ms": "cap is below the base", "backoff:10ms": "takes 2 duration", "fixed:5ms,2,3": "takes 1 duration",
	} {
		if _, err := ParseRetry(in, ""); err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--retry") {
			t.Errorf("ParseRetry(%q): %v, want an error saying %q", in, err, why)
		}
	}
	if _, err := ParseRetry("none", "half"); err == nil || !strings.Contains(err.Error(), "--retry-jitter") {
		t.Errorf("jitter half: %v, want a --retry-jitter error", err)
	}
}

// TestRetryPolicy_Delay: each jitter keeps each delay within its bounds,
// and a backoff doubles up to its cap.
func TestRetryPolicy_Delay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := time.Millisecond
	b := RetryPolicy{Kind: RetryBackoff, Base: 10 * ms, Cap: 60 * ms}
	for _, tc := range []struct {
		jitter string
		lo     func(d time.Duration) time.Duration
	}{{JitterFull, func(time.Duration) time.Duration { return 0 }}, {JitterEqual, func(d time.Duration) time.Duration { return d / 2 }},
		{JitterNone, func(d time.Duration) time.Duration { return d }}} {
		b.Jitter = tc.jitter
		for a, d := range []time.Duration{10 * ms, 20 * ms, 40 * ms, 60 * ms, 60 * ms, 60 * ms} {
			var most time.Duration
			for range 2000 {
				got := b.Delay(a, rng)
				if got < tc.lo(d) || got > d {
					t.Fatalf("jitter %s, attempt %d: delay %v outside [%v, %v]", tc.jitter, a, got, tc.lo(d), d)
				}
				most = max(most, got)
			}
			// The jitter spreads the delays: the largest of 2,000 draws is
			// near the bound.
			if most < d*9/10 {
				t.Errorf("jitter %s, attempt %d: largest delay %v, want near %v", tc.jitter, a, most, d)
			}
		}
	}
	if d := b.Delay(200, rng); d != 60*ms {
		t.Errorf("attempt 200 (shift overflow): %v, want the cap", d)
	}
	if (RetryPolicy{Attempts: 3}).more(3) || !(RetryPolicy{Attempts: 3}).more(2) || !(RetryPolicy{}).more(1<<30) {
		t.Errorf("more: attempts bound wrong")
	}
}
