package checker

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// refusedShapes are the shapes BenchmarkLinearizable_Refused measures:
// the issue's (issue66Shape) and variants of it, more of the
// indeterminate acquires grants, fewer quick ops, none.
var refusedShapes = []struct {
	name  string
	shape refusedShape
}{
	{"issue66", issue66Shape},
	{"grants-half", with(issue66Shape, func(s *refusedShape) { s.granted = 2 })},
	{"quick-quarter", with(issue66Shape, func(s *refusedShape) { s.quick = 1 })},
	{"quick-none", with(issue66Shape, func(s *refusedShape) { s.quick = 0 })},
	{"grants-all", with(issue66Shape, func(s *refusedShape) { s.granted, s.leases, s.refused = 4, 68, 6 })},
}

func with(s refusedShape, f func(*refusedShape)) refusedShape {
	f(&s)
	return s
}

// BenchmarkLinearizable_Refused: one key of 400 to 480 lock ops of each
// shape (genRefused), seeds 1 to 30, each checked within 10 s and 1 GB at
// tolerance 0 and a 100 ms horizon: it reports how many were decided
// (every one is valid), the slowest seed's time and the process's peak
// RSS. _NoHolders is the baseline, side by side: the issue's shape with
// the witness's rounds searched without the orphans that could refuse
// their misfits (holdersFor), as before it.
func BenchmarkLinearizable_Refused(b *testing.B) {
	for _, sh := range refusedShapes {
		b.Run(sh.name, func(b *testing.B) { benchRefused(b, sh.shape, 30, 0) })
	}
}

func BenchmarkLinearizable_Refused_NoHolders(b *testing.B) {
	benchRefused(b, issue66Shape, 30, skipHolders)
}

// BenchmarkLinearizable_Refused_EveryMisfit is the issue's shape with
// every misfit of a witness's round searched at once (no sparse), as
// before it, beside _Refused/issue66.
func BenchmarkLinearizable_Refused_EveryMisfit(b *testing.B) {
	benchRefused(b, issue66Shape, 30, skipSparse)
}

func benchRefused(b *testing.B, sh refusedShape, seeds uint64, skip reductions) {
	for range b.N {
		decided, slowest := 0, time.Duration(0)
		for seed := uint64(1); seed <= seeds; seed++ {
			ops := genRefused(seed, sh)
			start := time.Now()
			r := Linearizable(context.Background(), ops, Options{ClockTolerance: Exactly(0), InfoHorizon: Exactly(sh.horizon),
				Timeout: 10 * time.Second, Memory: 1 << 30, skip: skip}.Resolved())
			slowest = max(slowest, time.Since(start))
			switch r.Verdict {
			case Valid:
				decided++
			case Invalid:
				b.Fatalf("seed %d: a correct lock's history invalid: %+v", seed, r.Violations)
			}
		}
		b.ReportMetric(float64(decided), "decided/"+strconv.FormatUint(seeds, 10))
		b.ReportMetric(float64(slowest.Milliseconds()), "slowest-ms")
	}
	b.ReportMetric(peakRSSMB(), "peak-rss-MB")
}

// peakRSSMB is the process's peak resident set (VmHWM), in MB.
func peakRSSMB() float64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// TestLinearizable_RefusedDecided: the issue's shape (issue66Shape, 400
// to 480 lock ops on one key, tolerance 0, a 100 ms horizon), seeds 1 to
// 10, is decided valid; each broken (a lease that never ends taken in
// the middle, its acquire 1 ms wide: stuckMidOps; or a release of a token no one acquired) is decided
// invalid. Its bound is a minute a key, far above what each takes (the
// benchmark measures them): what it asserts is the verdict, not the
// time.
func TestLinearizable_RefusedDecided(t *testing.T) {
	sh := issue66Shape
	opt := Options{ClockTolerance: Exactly(0), InfoHorizon: Exactly(sh.horizon), Timeout: time.Minute, Memory: 1 << 30}.Resolved()
	for seed := uint64(1); seed <= 10; seed++ {
		ops := genRefused(seed, sh)
		if r := Linearizable(context.Background(), ops, opt); r.Verdict != Valid {
			t.Errorf("seed %d: %s, want valid (a correct lock's history): %+v %+v", seed, r.Verdict, r.Undecided, r.Violations)
		}
		for name, broken := range map[string][]history.Op{"stuck lease": stuckMidOps(ops), "ghost release": ghostRelease(ops)} {
			if r := Linearizable(context.Background(), broken, opt); r.Verdict != Invalid {
				t.Errorf("seed %d with a %s: %s, want invalid: %+v", seed, name, r.Verdict, r.Undecided)
			}
		}
	}
}
