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
	// Counts are the ops by f and type; LateExits, the writes that left
	// after their lease's deadline.
	Counts    history.Counts
	LateExits int64

	// While ops are added.
	tally     history.Tally
	end       int64
	nemesis   []history.Op
	perSeries map[string][]*hdrhistogram.Histogram // per series, per bucket
	c         contention
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 3) }

// newBucketHist is a histogram of one bucket of time, for its p99 on a
// chart: two significant figures are plenty there, and a seventh of the
// memory of three (there can be a thousand of them).
func newBucketHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 2) }

func us(ns int64) int64 { return min(max(ns/1000, 1), maxLatencyUs) }

// Buckets of time: they start at minBucket and double whenever there
// would be more than maxBuckets, so that a history of any length is
// charted in maxBuckets/2 to maxBuckets points and its Stats hold no more.
const (
	minBucket  = 100 * time.Millisecond
	maxBuckets = 200
)

// Compute derives Stats from a history in one pass over it (plus sorting
// per-client counts): NewStats, Add for each op, Finish.
func Compute(ops []history.Op) *Stats {
	s := NewStats()
	for i := range ops {
		s.Add(&ops[i])
	}
	s.AddAbandoned(checker.Abandoned(ops))
	s.Finish()
	return s
}

// NewStats returns Stats to be fed a history op by op, in history order
// (Add), then the leases never released (AddAbandoned), then Finish. What
// it holds is bounded by the clients and the leases open at once, not by
// the history's length.
func NewStats() *Stats {
	s := &Stats{Latency: map[string]*hdrhistogram.Histogram{}, P99: map[string][]float64{}, Bucket: minBucket,
		Wait: newHist(), Hold: newHist(), Acquire: newHist(), AbandonedStall: newHist(), StartLag: newHist(),
		perSeries: map[string][]*hdrhistogram.Histogram{},
		c:         contention{perClient: map[int]int64{}, firstAttempt: map[int]int64{}, acquiredAt: map[string]int64{}}}
	for _, se := range Series {
		s.Latency[se.Name] = newHist()
	}
	return s
}

// Add counts one op; ops come in history order.
func (s *Stats) Add(op *history.Op) {
	s.Ops++
	s.tally.Add(op)
	s.end = max(s.end, op.Return)
	if op.Late {
		s.LateExits++
	}
	if op.F == history.Nemesis {
		s.nemesis = append(s.nemesis, *op)
		return
	}
	s.timeOp(op)
	s.c.see(s, op)
}

// AddAbandoned records leases never released, and the stall after each.
func (s *Stats) AddAbandoned(stalls []checker.Stall) {
	for _, st := range stalls {
		s.Abandoned++
		if st.To >= 0 {
			_ = s.AbandonedStall.RecordValue(us(st.To - st.From))
		}
	}
}

// bucket returns the bucket of time t, doubling the buckets' width until
// t fits among maxBuckets.
func (s *Stats) bucket(t int64) int {
	for t/int64(s.Bucket) >= maxBuckets {
		s.Bucket *= 2
		half := func(xs []float64) []float64 {
			for i := range xs {
				if i%2 == 1 {
					xs[i/2] += xs[i]
				} else {
					xs[i/2] = xs[i]
				}
			}
			return xs[:(len(xs)+1)/2]
		}
		s.OK, s.Fail, s.Info = half(s.OK), half(s.Fail), half(s.Info)
		for name, hs := range s.perSeries {
			for i, h := range hs {
				switch {
				case i%2 == 0:
					hs[i/2] = h
				case hs[i/2] == nil:
					hs[i/2] = h
				case h != nil:
					hs[i/2].Merge(h)
				}
			}
			s.perSeries[name] = hs[:(len(hs)+1)/2]
		}
	}
	b := int(t / int64(s.Bucket))
	for len(s.OK) <= b {
		s.OK, s.Fail, s.Info = append(s.OK, 0), append(s.Fail, 0), append(s.Info, 0)
	}
	return b
}

// timeOp counts op in its bucket and records its latency in its series.
func (s *Stats) timeOp(op *history.Op) {
	b := s.bucket(op.Return)
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
			hs := s.perSeries[se.Name]
			for len(hs) <= b {
				hs = append(hs, nil)
			}
			if hs[b] == nil {
				hs[b] = newBucketHist()
			}
			_ = hs[b].RecordValue(lat)
			s.perSeries[se.Name] = hs
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

// Finish turns counts into rates and percentiles, and the contention
// figures; s is complete.
func (s *Stats) Finish() {
	s.Duration = time.Duration(s.end)
	s.bucket(s.end)
	nb := int(s.end/int64(s.Bucket)) + 1
	s.OK, s.Fail, s.Info = s.OK[:nb], s.Fail[:nb], s.Info[:nb]
	s.Faults = checker.FaultWindows(s.nemesis)
	s.Counts = s.tally.Counts()
	secs := s.Bucket.Seconds()
	for b := range s.OK {
		s.OK[b] /= secs
		s.Fail[b] /= secs
		s.Info[b] /= secs
	}
	for _, se := range Series {
		ys := make([]float64, nb)
		for b := range ys {
			ys[b] = math.NaN()
			if hs := s.perSeries[se.Name]; b < len(hs) && hs[b] != nil {
				ys[b] = float64(hs[b].ValueAtQuantile(99)) / 1000
			}
		}
		s.P99[se.Name] = ys
	}
	s.perSeries = nil
	if s.AcquireAttempts > 0 {
		s.SuccessRatio = float64(s.Acquisitions) / float64(s.AcquireAttempts)
	}
	for _, n := range s.c.perClient {
		s.PerClient = append(s.PerClient, n)
	}
	sort.Slice(s.PerClient, func(i, j int) bool { return s.PerClient[i] < s.PerClient[j] })
	s.Processes = len(s.c.perClient)
	s.Jain = jain(s.PerClient)
	s.c = contention{}
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
