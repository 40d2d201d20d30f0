// Package report renders a run for people (report.html, compare.html) and
// for tools (junit.xml, latency-<op>.hgrm). It sees only histories and
// checker results.
package report

import (
	"math"
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Series are the per-op latency classes the report plots.
var Series = []struct {
	Name string
	F    history.Func
	T    history.Type
}{
	{"acquire-ok", history.Acquire, history.OK},
	{"acquire-fail", history.Acquire, history.Fail},
	{"release", history.Release, ""},
	{"extend", history.Extend, ""},
	{"write", history.Write, history.OK},
}

// maxLatencyUs bounds recorded latencies (1 hour, in µs).
const maxLatencyUs = int64(time.Hour / time.Microsecond)

// Stats is everything the report shows that is computed from the history.
type Stats struct {
	Ops      int
	Duration time.Duration
	// Latency per series, in µs.
	Latency map[string]*hdrhistogram.Histogram
	// Buckets of time, for throughput and latency over time.
	Bucket    time.Duration
	OK        []float64 // ops/s per bucket
	Fail      []float64
	Info      []float64
	P99       map[string][]float64 // ms, per bucket, per series
	Faults    []checker.FaultWindow
	Processes int
	// Contention.
	Acquisitions    int64
	AcquireAttempts int64
	Acquire         *hdrhistogram.Histogram // µs, every acquire
	SuccessRatio    float64
	Wait            *hdrhistogram.Histogram // µs from first attempt to success
	PerClient       []int64                 // acquisitions per client, sorted
	Jain            float64
	// Leases.
	TTL         time.Duration
	Hold        *hdrhistogram.Histogram // µs from acquire return to release call
	ReleaseGone int64                   // releases that found the lease gone
	CutShort    int64                   // sections cut short (write ops marked so)
	Sections    int64                   // write ops
	// Advice is the TTL against the holds (Advise; Compute gives it the
	// default factor).
	Advice TTLAdvice
	// Abandoned are the leases never released (a skipped release, a
	// crashed holder) and how long their key stayed unavailable after
	// them; AbandonedStall in µs.
	Abandoned      int64
	AbandonedStall *hdrhistogram.Histogram
	// StartLag is, in an open-model run (--rate), how long each acquire
	// waited past its scheduled start for a free worker (µs); its latency
	// counts from the schedule (history.Op.Start).
	StartLag *hdrhistogram.Histogram
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 3) }

func us(ns int64) int64 { return min(max(ns/1000, 1), maxLatencyUs) }

// Compute derives Stats from a history in one pass over it (plus sorting
// per-client counts).
func Compute(ops []history.Op) *Stats {
	s := newStats(ops)
	perSeries := map[string][]*hdrhistogram.Histogram{} // per series, per bucket
	for _, se := range Series {
		perSeries[se.Name] = make([]*hdrhistogram.Histogram, len(s.OK))
	}
	c := contention{perClient: map[int]int64{}, firstAttempt: map[int]int64{}, acquiredAt: map[string]int64{}}
	for i := range ops {
		op := &ops[i]
		if op.F == history.Nemesis {
			continue
		}
		s.timeOp(op, perSeries)
		c.see(s, op)
	}
	for _, st := range checker.Abandoned(ops) {
		s.Abandoned++
		if st.To >= 0 {
			_ = s.AbandonedStall.RecordValue(us(st.To - st.From))
		}
	}
	s.finish(perSeries, c.perClient)
	return s
}

// newStats sizes s for the history: its duration and about 100 buckets
// of time, at least 100ms each.
func newStats(ops []history.Op) *Stats {
	s := &Stats{Ops: len(ops), Latency: map[string]*hdrhistogram.Histogram{}, P99: map[string][]float64{},
		Wait: newHist(), Hold: newHist(), Acquire: newHist(), AbandonedStall: newHist(), StartLag: newHist(), Faults: checker.FaultWindows(ops)}
	for _, se := range Series {
		s.Latency[se.Name] = newHist()
	}
	var end int64
	for i := range ops {
		end = max(end, ops[i].Return)
	}
	s.Duration = time.Duration(end)
	s.Bucket = max(100*time.Millisecond, (s.Duration / 100).Round(100*time.Millisecond))
	nb := int(int64(s.Duration)/int64(s.Bucket)) + 1
	s.OK, s.Fail, s.Info = make([]float64, nb), make([]float64, nb), make([]float64, nb)
	return s
}

// timeOp counts op in its bucket and records its latency in its series.
func (s *Stats) timeOp(op *history.Op, perSeries map[string][]*hdrhistogram.Histogram) {
	b := int(op.Return / int64(s.Bucket))
	switch op.Type {
	case history.OK:
		s.OK[b]++
	case history.Fail:
		s.Fail[b]++
	default:
		s.Info[b]++
	}
	lat := us(op.Return - op.Start())
	for _, se := range Series {
		if op.F == se.F && (se.T == "" || op.Type == se.T) {
			_ = s.Latency[se.Name].RecordValue(lat)
			h := perSeries[se.Name][b]
			if h == nil {
				h = newHist()
				perSeries[se.Name][b] = h
			}
			_ = h.RecordValue(lat)
		}
	}
}

// contention follows each client's attempts and each lease's hold.
type contention struct {
	perClient    map[int]int64    // acquisitions per process
	firstAttempt map[int]int64    // process -> call of the first attempt of its current streak
	acquiredAt   map[string]int64 // token -> acquire return
}

func (c *contention) see(s *Stats, op *history.Op) {
	switch op.F {
	case history.Acquire:
		s.AcquireAttempts++
		_ = s.Acquire.RecordValue(us(op.Return - op.Start()))
		if op.Scheduled > 0 {
			_ = s.StartLag.RecordValue(us(op.Call - op.Scheduled))
		}
		s.TTL = max(s.TTL, op.TTL())
		if _, ok := c.firstAttempt[op.Process]; !ok {
			c.firstAttempt[op.Process] = op.Start()
		}
		if op.Type == history.OK {
			s.Acquisitions++
			c.perClient[op.Process]++
			_ = s.Wait.RecordValue(us(op.Return - c.firstAttempt[op.Process]))
			delete(c.firstAttempt, op.Process)
			c.acquiredAt[op.Token] = op.Return
		}
	case history.Write, history.Release:
		delete(c.firstAttempt, op.Process)
		if op.F == history.Write {
			s.Sections++
		}
		if op.CutShort {
			s.CutShort++
		}
		if op.F == history.Release {
			if t, ok := c.acquiredAt[op.Token]; ok {
				_ = s.Hold.RecordValue(us(op.Call - t))
				delete(c.acquiredAt, op.Token)
			}
			if op.Type == history.Fail {
				s.ReleaseGone++
			}
		}
	}
}

// finish turns counts into rates and percentiles, and the contention
// figures.
func (s *Stats) finish(perSeries map[string][]*hdrhistogram.Histogram, perClient map[int]int64) {
	secs := s.Bucket.Seconds()
	for b := range s.OK {
		s.OK[b] /= secs
		s.Fail[b] /= secs
		s.Info[b] /= secs
	}
	for _, se := range Series {
		ys := make([]float64, len(s.OK))
		for b, h := range perSeries[se.Name] {
			ys[b] = math.NaN()
			if h != nil {
				ys[b] = float64(h.ValueAtQuantile(99)) / 1000
			}
		}
		s.P99[se.Name] = ys
	}
	if s.AcquireAttempts > 0 {
		s.SuccessRatio = float64(s.Acquisitions) / float64(s.AcquireAttempts)
	}
	for _, n := range perClient {
		s.PerClient = append(s.PerClient, n)
	}
	sort.Slice(s.PerClient, func(i, j int) bool { return s.PerClient[i] < s.PerClient[j] })
	s.Processes = len(perClient)
	s.Jain = jain(s.PerClient)
	s.Advise(0)
}

// jain is Jain's fairness index of xs: 1 when all are equal, 1/n when one
// client gets everything.
func jain(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
