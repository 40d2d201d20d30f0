package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/workload"
)

// MaxScale bounds how far Scaled stretches a scenario.
const MaxScale = 20

// Scaled is s sized to a lock whose keys live f times the TTL asked for
// (whole seconds, a TTL the lock adds to): its TTL, holds, think times,
// margin and extends, and its faults' schedule, f times as long, and its
// runs up to twice as long, so that what it exists for (a hold past the
// lease, a pause past it) is past the key's life, not the TTL lockcheck
// asked for. A lock whose TTL unit is a second meets overrun's holds of
// 0 to 200 ms under its 1 s keys, never past them, and is short for
// ever; scaled, its holds reach past its keys.
func (s Scenario) Scaled(f int) Scenario {
	if f <= 1 {
		return s
	}
	f = min(f, MaxScale)
	d := time.Duration(f)
	own := s.Workload
	s.Workload = func(w *workload.Config) {
		if own != nil {
			own(w)
		}
		w.TTL, w.Hold, w.Think, w.Margin, w.ExtendEvery = w.TTL*d, w.Hold*d, w.Think*d, w.Margin*d, w.ExtendEvery*d
		w.Duration *= min(d, 2)
	}
	s.Nemesis.Interval, s.Nemesis.Duration, s.RestartDelay = s.Nemesis.Interval*d, s.Nemesis.Duration*d, s.RestartDelay*d
	return s
}

// ScaleFor is the factor Scaled takes for a lock whose key lived keyTTL
// where the scenario asked for ttl: the ratio, where the key outlives the
// TTL twice or more (1: the scenario fits the lock as it is).
func ScaleFor(ttl, keyTTL time.Duration) int {
	if ttl <= 0 || keyTTL < 2*ttl {
		return 1
	}
	return int((keyTTL + ttl - 1) / ttl)
}

// StallsRedis says whether s's one fault stalls Redis (pause-redis): a
// lock whose client waits a stall out meets no indeterminate acquire in
// it, so verify stretches the stall (Stalled) or finds the scenario n/a.
func (s Scenario) StallsRedis() bool {
	return len(s.Nemesis.Faults) == 1 && s.Nemesis.Faults[0] == "pause-redis"
}

// Stalled is s with each fault window lasting d where it lasted less,
// the windows as far apart relative to it as before and the run as much
// longer: for a lock whose client waits a stall out (its own command
// timeout, lockimpl.OwnTimeouter, at least the stall), so that a stall
// outlasts it and acquires end indeterminate, as the scenario needs.
func (s Scenario) Stalled(d time.Duration) Scenario {
	if s.Nemesis.Duration <= 0 || d <= s.Nemesis.Duration {
		return s
	}
	stretch := func(t time.Duration) time.Duration {
		return time.Duration(float64(t) * float64(d) / float64(s.Nemesis.Duration))
	}
	s.Nemesis.Interval, s.Nemesis.Duration = stretch(s.Nemesis.Interval), d
	own := s.Workload
	s.Workload = func(w *workload.Config) {
		if own != nil {
			own(w)
		}
		w.Duration = stretch(w.Duration)
	}
	return s
}
