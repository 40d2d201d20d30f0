package agent

import (
	"math/rand/v2"
	"testing"
)

// TestClock_ToContainsTruth is the conversion's soundness, tried on
// random clocks: an agent clock off by a random skew and drifting at up
// to the allowance, measured by round trips whose two legs are random and
// unequal; every agent time converted, before, between and after the
// measurements, lands within its bound of the true coordinator time.
func TestClock_ToContainsTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		skew := rng.Int64N(2e9) - 1e9      // ±1 s
		drift := rng.Int64N(2*500+1) - 500 // ppm, within DefaultDrift
		// agent(c) = c + skew + c*drift/1e6, for coordinator time c.
		agentAt := func(c int64) int64 { return c + skew + c*drift/1_000_000 }
		var clk Clock
		c := rng.Int64N(1e9)
		for range 1 + rng.IntN(20) {
			out := rng.Int64N(5e6) // the legs: up to 5 ms each, unequal
			back := rng.Int64N(5e6)
			sent := c
			a := agentAt(sent + out)
			recv := sent + out + back
			clk.Add(Sample{Sent: sent, Agent: a, Recv: recv})
			c = recv + rng.Int64N(500e6)
		}
		for range 50 {
			truth := rng.Int64N(c + 2e9)
			got, bound := clk.To(agentAt(truth))
			// The integer ppm arithmetic above rounds: a ns of slack.
			if d := got - truth; d > bound+1 || -d > bound+1 {
				t.Fatalf("trial %d (skew %d, drift %d ppm): agent time of %d converts to %d ± %d", trial, skew, drift, truth, got, bound)
			}
		}
	}
}

// TestClock_PicksTightest: of two measurements, the conversion uses the
// one whose bound, widened by the drift since, is smaller; Off converts
// nothing.
func TestClock_PicksTightest(t *testing.T) {
	var clk Clock
	clk.Add(Sample{Sent: 0, Agent: 1_000_500, Recv: 1_000})          // offset 1 ms ± 500 ns, at agent 1_000_500
	clk.Add(Sample{Sent: 10e9, Agent: 10e9 + 2e6, Recv: 10e9 + 2e6}) // offset 1 ms ± 1 ms, at 10 s
	got, bound := clk.To(1_000_500 + 1e6)                            // 1 ms after the first
	if got != 1e6+500 || bound != 500+501 {
		t.Errorf("near the first: %d ± %d, want %d ± %d (500 ns, and 1 ms at 501 ppm)", got, bound, 1_000_500, 1001)
	}
	_, bound = clk.To(10e9 + 2e6)
	if bound != 1e6 {
		t.Errorf("at the second: bound %d, want its own 1 ms (the first's 500 ns widened by 10 s at 500 ppm is 5 ms)", bound)
	}
	clk.Off = true
	if got, bound := clk.To(42); got != 42 || bound != 0 {
		t.Errorf("off: %d ± %d, want 42 ± 0", got, bound)
	}
}

func TestTokenMatches(t *testing.T) {
	if !TokenMatches("abc", "abc") || TokenMatches("abc", "abd") || TokenMatches("", "abc") || TokenMatches("abcd", "abc") {
		t.Error("TokenMatches compares wrong")
	}
}
