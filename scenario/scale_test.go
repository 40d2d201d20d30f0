package scenario

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/workload"
)

// TestScaled: a scenario sized ×10 has ten times the TTL, holds and
// fault schedule, and twice the duration, or the time its fault windows
// take (a stall keeps its length); ScaleFor sizes only where the
// key outlives the TTL twice or more.
func TestScaled(t *testing.T) {
	s, _ := Lookup("overrun")
	w := Base
	s.Scaled(10).Workload(&w)
	if w.TTL != time.Second || w.Hold != time.Second || w.Duration != 2*Base.Duration {
		t.Errorf("overrun ×10: ttl %v hold %v duration %v; want 1s, 1s, %v", w.TTL, w.Hold, w.Duration, 2*Base.Duration)
	}
	p, _ := Lookup("pause")
	if got := p.Scaled(10).Nemesis; got.Interval != 10*p.Nemesis.Interval || got.Duration != 10*p.Nemesis.Duration {
		t.Errorf("pause ×10: nemesis %v every %v; want ×10 of %v every %v", got.Duration, got.Interval, p.Nemesis.Duration, p.Nemesis.Interval)
	}
	// A stall keeps its length (the client's timeout sizes it); the quiet
	// after it grows as the lease does (4 × 200 ms more), and the run is
	// twice as long, more than its two stalls take.
	q, _ := Lookup("stall-quiet")
	qs := q.Scaled(5)
	wq := Base
	qs.Workload(&wq)
	if want := q.Nemesis.Interval + 800*time.Millisecond; qs.Nemesis.Duration != q.Nemesis.Duration || qs.Nemesis.Interval != want || wq.Duration != 20*time.Second {
		t.Errorf("stall-quiet ×5: stall %v every %v, run %v; want %v every %v, run 20s", qs.Nemesis.Duration, qs.Nemesis.Interval, wq.Duration, q.Nemesis.Duration, want)
	}
	wp := Base
	p.Scaled(10).Workload(&wp)
	if wp.Duration != MaxRun {
		t.Errorf("pause ×10: run %v; want its six windows' 65 s bounded to %v", wp.Duration, MaxRun)
	}
	if w2 := (workload.Config{}); s.Scaled(1).Workload != nil {
		s.Scaled(1).Workload(&w2)
		if w2.TTL != 100*time.Millisecond {
			t.Errorf("×1 changed the scenario: ttl %v", w2.TTL)
		}
	}
	for _, c := range []struct {
		ttl, key time.Duration
		want     int
	}{{100 * time.Millisecond, time.Second, 10}, {100 * time.Millisecond, 1500 * time.Millisecond, 15}, {time.Second, 1500 * time.Millisecond, 1}, {200 * time.Millisecond, 200 * time.Millisecond, 1}} {
		if got := ScaleFor(c.ttl, c.key); got != c.want {
			t.Errorf("ScaleFor(%v, %v) = %d, want %d", c.ttl, c.key, got, c.want)
		}
	}
	for _, c := range []struct {
		ttl, p50 time.Duration
		want     int
	}{{100 * time.Millisecond, 25 * time.Millisecond, 1}, {100 * time.Millisecond, 100 * time.Millisecond, 4}, {100 * time.Millisecond, 130 * time.Millisecond, 6}, {time.Second, time.Millisecond, 1}} {
		if got := ScaleForLatency(c.ttl, c.p50); got != c.want {
			t.Errorf("ScaleForLatency(%v, %v) = %d, want %d", c.ttl, c.p50, got, c.want)
		}
	}
}
