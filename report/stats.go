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
	SuccessRatio    float64
	Wait            *hdrhistogram.Histogram // µs from first attempt to success
	PerClient       []int64                 // acquisitions per client, sorted
	Jain            float64
	// Leases.
	TTL          time.Duration
	Hold         *hdrhistogram.Histogram // µs from acquire return to release call
	ReleaseGone  int64                   // releases that found the lease gone
	SuggestedTTL time.Duration           // 0: the TTL fits
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 3) }

func us(ns int64) int64 { return min(max(ns/1000, 1), maxLatencyUs) }

// Compute derives Stats from a history in one pass over it (plus sorting
// per-client counts).
func Compute(ops []history.Op) *Stats {
	s := &Stats{Ops: len(ops), Latency: map[string]*hdrhistogram.Histogram{}, P99: map[string][]float64{},
		Wait: newHist(), Hold: newHist(), Faults: checker.FaultWindows(ops)}
	for _, se := range Series {
		s.Latency[se.Name] = newHist()
	}
	var end int64
	for i := range ops {
		end = max(end, ops[i].Return)
	}
	s.Duration = time.Duration(end)
	// About 100 buckets, at least 100ms each.
	s.Bucket = max(100*time.Millisecond, (s.Duration / 100).Round(100*time.Millisecond))
	nb := int(int64(s.Duration)/int64(s.Bucket)) + 1
	s.OK, s.Fail, s.Info = make([]float64, nb), make([]float64, nb), make([]float64, nb)
	bucketHist := map[string][]*hdrhistogram.Histogram{}
	for _, se := range Series {
		bucketHist[se.Name] = make([]*hdrhistogram.Histogram, nb)
	}
	perClient := map[int]int64{}
	firstAttempt := map[int]int64{}  // process -> call of the first attempt of its current streak
	acquiredAt := map[string]int64{} // token -> acquire return
	for i := range ops {
		op := &ops[i]
		if op.F == history.Nemesis {
			continue
		}
		b := int(op.Return / int64(s.Bucket))
		switch op.Type {
		case history.OK:
			s.OK[b]++
		case history.Fail:
			s.Fail[b]++
		default:
			s.Info[b]++
		}
		lat := us(op.Return - op.Call)
		for _, se := range Series {
			if op.F == se.F && (se.T == "" || op.Type == se.T) {
				_ = s.Latency[se.Name].RecordValue(lat)
				h := bucketHist[se.Name][b]
				if h == nil {
					h = newHist()
					bucketHist[se.Name][b] = h
				}
				_ = h.RecordValue(lat)
			}
		}
		switch op.F {
		case history.Acquire:
			s.AcquireAttempts++
			s.TTL = max(s.TTL, op.TTL())
			if _, ok := firstAttempt[op.Process]; !ok {
				firstAttempt[op.Process] = op.Call
			}
			if op.Type == history.OK {
				s.Acquisitions++
				perClient[op.Process]++
				_ = s.Wait.RecordValue(us(op.Return - firstAttempt[op.Process]))
				delete(firstAttempt, op.Process)
				acquiredAt[op.Token] = op.Return
			}
		case history.Write, history.Release:
			delete(firstAttempt, op.Process)
			if op.F == history.Release {
				if t, ok := acquiredAt[op.Token]; ok {
					_ = s.Hold.RecordValue(us(op.Call - t))
					delete(acquiredAt, op.Token)
				}
				if op.Type == history.Fail {
					s.ReleaseGone++
				}
			}
		}
	}
	secs := s.Bucket.Seconds()
	for b := 0; b < nb; b++ {
		s.OK[b] /= secs
		s.Fail[b] /= secs
		s.Info[b] /= secs
	}
	for _, se := range Series {
		ys := make([]float64, nb)
		for b, h := range bucketHist[se.Name] {
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
	if p99 := time.Duration(s.Hold.ValueAtQuantile(99)) * time.Microsecond; s.TTL > 0 && p99 > s.TTL {
		s.SuggestedTTL = (p99 * 3 / 2).Round(time.Millisecond)
	}
	return s
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
