package harness

import (
	"cmp"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// resolveCheck is where a check's options are decided, once per run (when
// its Redis is up) or per offline check (when its run dir is read): each
// of given's (the flags, a scenario's) where set, else fallback's (what
// the run decided: its info horizon, an external Redis's tolerance; or,
// offline, what run.json recorded), else the checker's default. The
// checkers read the result as it is.
func resolveCheck(given, fallback checker.Options) checker.Options {
	pick := func(g, f time.Duration) time.Duration {
		if g != 0 {
			return g
		}
		return f
	}
	given.ClockTolerance = pick(given.ClockTolerance, fallback.ClockTolerance)
	given.InfoHorizon = pick(given.InfoHorizon, fallback.InfoHorizon)
	given.Timeout = pick(given.Timeout, fallback.Timeout)
	if given.Memory == 0 {
		given.Memory = fallback.Memory
	}
	if given.NotJudged == nil {
		given.NotJudged = fallback.NotJudged
	}
	given.Shape = cmp.Or(given.Shape, fallback.Shape)
	return given.Resolved()
}

// runFallback is what a run decides for the options its caller left
// unset: the info horizon of its faults, and on an external Redis a
// tolerance widened by the worst PING round trip (a remote server's
// clock, and the split of a round trip between its legs, are unknown).
func (r *run) runFallback() checker.Options {
	f := checker.Options{InfoHorizon: infoHorizon(r.workload, r.nemesis, r.cfg.RestartDelay), Shape: r.shape}
	if r.cl.External() {
		f.ClockTolerance = checker.DefaultClockTolerance + r.cl.RTT.Round(time.Millisecond) + time.Millisecond
	}
	return f
}

// recorded is what run.json says the run was checked with: an offline
// check's fallback (a 0 recorded means 0).
func recorded(info report.RunInfo) checker.Options {
	o := checker.Options{Shape: info.Workload.Shape}
	for g, why := range info.NotJudged {
		if o.NotJudged == nil {
			o.NotJudged = map[checker.Guarantee]string{}
		}
		o.NotJudged[checker.Guarantee(g)] = why
	}
	for _, f := range []struct {
		opt *time.Duration
		ran string
	}{{&o.InfoHorizon, info.InfoHorizon}, {&o.ClockTolerance, info.ClockTolerance}} {
		if d, err := time.ParseDuration(f.ran); err == nil {
			*f.opt = checker.Exactly(d)
		}
	}
	return o
}
