package agent

import (
	"sync"
	"time"
)

// DefaultDrift is the drift allowance between two clocks, in parts per
// million: how far apart two crystals may run between two measurements
// (quartz is within 100 ppm; a VM's clock can be worse).
const DefaultDrift = 500

// Sample is one round trip of a clock measurement: the coordinator sent
// at Sent and read the reply at Recv (its clock), the agent read its
// clock at Agent in between.
type Sample struct{ Sent, Agent, Recv int64 }

// Offset is what one sample says, NTP-style: agent clock minus
// coordinator clock, within ± Bound, as of the agent's time At. It holds
// because the agent read its clock at some instant between Sent and Recv:
// whatever the split of the round trip between its two legs, the true
// offset is within half of it of the midpoint's.
type Offset struct {
	Offset int64 `json:"offset_ns"`
	Bound  int64 `json:"bound_ns"`
	At     int64 `json:"at_ns"` // on the agent's clock
	RTT    int64 `json:"rtt_ns"`
}

// Of returns what s says of the offset.
func (s Sample) Of() Offset {
	rtt := max(s.Recv-s.Sent, 0)
	// Midpoint, rounded away from the sample: the bound covers the
	// remainder of the halving.
	return Offset{Offset: s.Agent - (s.Sent + rtt/2), Bound: rtt/2 + rtt%2, At: s.Agent, RTT: rtt}
}

// Clock converts one agent's times to the coordinator's clock. It keeps
// the measurements of the last Window and converts each time with the one
// that bounds it tightest: a measurement's bound plus the drift allowance
// over the time between it and the converted instant (which covers a
// clock that runs fast or slow between measurements, up to Drift ppm). It
// is safe for concurrent use.
type Clock struct {
	// Drift is the allowance in ppm (0: DefaultDrift).
	Drift int64
	// Off, if set, converts with a zero offset and bound: the agent's
	// times are taken as the coordinator's, as if the clocks agreed. It
	// exists for tests that show what the correction prevents.
	Off bool

	mu   sync.Mutex
	hist []Offset // every measurement, oldest first
}

// maxKept bounds the measurements kept per agent (one a quarter second
// is about an hour).
const maxKept = 16384

// Add records a measurement.
func (c *Clock) Add(s Sample) Offset {
	o := s.Of()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.hist) == maxKept {
		c.hist = append(c.hist[:0], c.hist[maxKept/2:]...)
	}
	c.hist = append(c.hist, o)
	return o
}

// Measured says whether any measurement was made.
func (c *Clock) Measured() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.hist) > 0
}

// History returns the measurements made, oldest first.
func (c *Clock) History() []Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Offset(nil), c.hist...)
}

// Best returns the measurement with the smallest round trip.
func (c *Clock) Best() Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best Offset
	for i, o := range c.hist {
		if i == 0 || o.Bound < best.Bound {
			best = o
		}
	}
	return best
}

// near is how many measurements on each side of an instant To looks at:
// they are in the order they were made, so the tightest is close by.
const near = 64

// To converts agent time a to the coordinator's clock, and returns the
// bound of the conversion. It must not be called before a measurement.
func (c *Clock) To(a int64) (int64, int64) {
	if c.Off {
		return a, 0
	}
	o := c.pick(a)
	return a - o.Offset, o.Bound + c.drift(a-o.At)
}

// pick returns the measurement that bounds agent time a tightest.
func (c *Clock) pick(a int64) Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The first measurement made at or after a, by binary search.
	lo, hi := 0, len(c.hist)
	for lo < hi {
		m := (lo + hi) / 2
		if c.hist[m].At < a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	best, bestBound := Offset{}, int64(-1)
	for i := max(0, lo-near); i < min(len(c.hist), lo+near); i++ {
		o := c.hist[i]
		if b := o.Bound + c.drift(a-o.At); bestBound < 0 || b < bestBound {
			best, bestBound = o, b
		}
	}
	return best
}

// drift is the allowance over an interval of d ns, rounded up.
func (c *Clock) drift(d int64) int64 {
	if d < 0 {
		d = -d
	}
	ppm := c.Drift
	if ppm == 0 {
		ppm = DefaultDrift
	}
	// One ppm more: the allowance is counted in agent time, which a fast
	// clock stretches by its own rate.
	return (d*(ppm+1) + 999_999) / 1_000_000
}

// Skewed is a clock source run off on purpose, for tests and
// demonstrations of the correction: it reads base's time plus Skew, plus
// Drift ppm of the time since base started.
type Skewed struct {
	Base  func() int64
	Skew  time.Duration
	Drift int64 // ppm
}

// Now reads the skewed clock.
func (s Skewed) Now() int64 {
	t := s.Base()
	return t + int64(s.Skew) + t*s.Drift/1_000_000
}
