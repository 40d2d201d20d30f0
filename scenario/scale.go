package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// MaxScale bounds how far Scaled stretches a scenario.
const MaxScale = 20

// Scaled is s sized to a lock whose keys live f times the TTL asked for
// (whole seconds, a TTL the lock adds to): its TTL, holds, think times,
// margin and extends, and its faults' schedule, f times as long, so that
// what it exists for (a hold past the lease, a pause past it, a quiet
// past it after a stall) is past the key's life, not the TTL lockcheck
// asked for. A lock whose TTL unit is a second meets overrun's holds of
// 0 to 200 ms under its 1 s keys, never past them, and is short for
// ever; scaled, its holds reach past its keys. A stall of Redis
// (StallsRedis) keeps its length: it is sized to the client's command
// timeout (Stalled), not to the lease; the quiet between stalls grows
// as the lease does.
// The run lasts twice as long, or as long as the fault windows the
// scenario held unscaled take scaled, with the quiet after the last one
// (at most MaxRun): a run that ended inside its first window met
// nothing the scenario needs after it.
func (s Scenario) Scaled(f int) Scenario {
	if f <= 1 {
		return s
	}
	f = min(f, MaxScale)
	d := time.Duration(f)
	was := s.Nemesis
	s.Nemesis.Interval, s.Nemesis.Duration, s.RestartDelay = s.Nemesis.Interval*d, s.Nemesis.Duration*d, s.RestartDelay*d
	if s.StallsRedis() {
		s.Nemesis.Interval, s.Nemesis.Duration = was.Interval+(d-1)*s.baseTTL(), was.Duration
	}
	own := s.Workload
	s.Workload = func(w *workload.Config) {
		if own != nil {
			own(w)
		}
		w.TTL, w.Hold, w.Think, w.Margin, w.ExtendEvery = w.TTL*d, w.Hold*d, w.Think*d, w.Margin*d, w.ExtendEvery*d
		w.Duration = max(w.Duration*min(d, 2), min(windowsRun(w.Duration, was, s.Nemesis), MaxRun))
	}
	return s
}

// baseTTL is the TTL s asks for on Base.
func (s Scenario) baseTTL() time.Duration {
	w := Base
	if s.Workload != nil {
		s.Workload(&w)
	}
	return w.TTL
}

// MaxRun bounds how long Scaled makes a run to keep its fault windows.
const MaxRun = time.Minute

// windowsRun is how long a run of run with schedule was takes to hold as
// many windows (at least one) under schedule now, and the quiet after the
// last: 0 for a scenario with no fault schedule.
func windowsRun(run time.Duration, was, now nemesis.Config) time.Duration {
	period := was.Interval + was.Duration
	if len(was.Faults) == 0 || period <= 0 {
		return 0
	}
	n := max(run/period, 1)
	return n*(now.Interval+now.Duration) + now.Interval
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

// ScaleForLatency is the factor Scaled takes for a lock whose acquires
// took p50 (the median of those granted) where the scenario asked for
// ttl: enough that the TTL is four times p50, where it is less (1: the
// scenario fits). A lease is surely live only from its acquire's return
// to its call plus the TTL, less the clock tolerance: a lock whose
// acquires take about the TTL (200 PHP processes on two cores, 50 to
// 250 ms an acquire under overrun's 100 ms TTL) holds no lease surely,
// and no release of it is ever seen late while another client holds.
func ScaleForLatency(ttl, p50 time.Duration) int {
	if ttl <= 0 || 4*p50 <= ttl {
		return 1
	}
	return int((4*p50 + ttl - 1) / ttl)
}

// ScaleTo is the factor s is sized by (Scaled, at most MaxScale) for a
// lock whose keys lived key where s asked for ttl (ScaleFor) and, for the
// scenarios of late releases (Overrun), whose granted acquires took p50
// (median; ScaleForLatency), and whether its keys decided it rather than
// its latency. Only the late-release figures need leases surely live: a
// scenario that counts refusals (contention) gets fewer of them from
// longer leases, not more.
func (s Scenario) ScaleTo(ttl, key, p50 time.Duration) (f int, byKey bool) {
	k, l := ScaleFor(ttl, key), 1
	if s.Overrun {
		l = ScaleForLatency(ttl, p50)
	}
	return min(max(k, l), MaxScale), k >= l
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
