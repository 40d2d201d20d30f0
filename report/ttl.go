package report

import (
	"fmt"
	"time"
)

// DefaultTTLFactor is --ttl-factor's default: the TTL a rule of thumb
// gives is the p99 hold times this.
const DefaultTTLFactor = 3

// TTLAdvice is results.json's ttl_advice: the hold times (acquire to
// release, the time a client wanted the lock for) against the TTL, how
// many critical sections the TTL cut short, and the TTL each rule of thumb
// gives.
type TTLAdvice struct {
	TTLms float64 `json:"ttl_ms"`
	// Holds counts the holds measured (leases released).
	Holds     int64   `json:"holds"`
	HoldP50ms float64 `json:"hold_p50_ms"`
	HoldP99ms float64 `json:"hold_p99_ms"`
	HoldMaxms float64 `json:"hold_max_ms"`
	// HoldsOverTTL counts holds longer than the TTL: work that outlived
	// its lease, or would have, had the client not left at the deadline.
	HoldsOverTTL int64 `json:"holds_over_ttl"`
	// Sections counts critical sections (write ops); CutShort those a
	// client left before its work was done, at its lease's deadline (or a
	// paused client's stale write); CutShortFraction is their share.
	Sections         int64     `json:"sections"`
	CutShort         int64     `json:"cut_short"`
	CutShortFraction float64   `json:"cut_short_fraction"`
	Factor           float64   `json:"factor"`
	Rules            []TTLRule `json:"rules"`
}

// TTLRule is one rule of thumb and the TTL it gives for this run's holds.
type TTLRule struct {
	Rule  string  `json:"rule"`
	TTLms float64 `json:"ttl_ms"`
	// Fits: the run's TTL is at least what the rule gives.
	Fits bool `json:"fits"`
}

// Advise computes s.Advice with the rule factor (<= 0: DefaultTTLFactor).
func (s *Stats) Advise(factor float64) {
	if factor <= 0 {
		factor = DefaultTTLFactor
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	a := TTLAdvice{TTLms: float64(s.TTL) / float64(time.Millisecond), Holds: s.Hold.TotalCount(), Factor: factor,
		Sections: s.Sections, CutShort: s.CutShort}
	if a.Holds > 0 {
		a.HoldP50ms, a.HoldP99ms, a.HoldMaxms = ms(s.Hold.ValueAtQuantile(50)), ms(s.Hold.ValueAtQuantile(99)), ms(s.Hold.Max())
	}
	ttlUs := s.TTL.Microseconds()
	for _, b := range s.Hold.Distribution() {
		if b.From > ttlUs {
			a.HoldsOverTTL += b.Count
		}
	}
	if a.Sections > 0 {
		a.CutShortFraction = float64(a.CutShort) / float64(a.Sections)
	}
	rules := []struct {
		name string
		f    float64
	}{{"3 × p99 hold", 3}}
	if factor != 3 {
		// The default factor is the first rule: said once.
		rules = append(rules, struct {
			name string
			f    float64
		}{fmt.Sprintf("p99 hold × %g (--ttl-factor)", factor), factor})
	}
	for _, r := range rules {
		ttl := float64(time.Duration(a.HoldP99ms*r.f*float64(time.Millisecond)).Round(time.Millisecond)) / float64(time.Millisecond)
		a.Rules = append(a.Rules, TTLRule{Rule: r.name, TTLms: ttl, Fits: a.TTLms >= ttl})
	}
	s.Advice = a
}
