package nemesis

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

type fakeClients struct {
	mu                     sync.Mutex
	paused, crashed, heals int
}

func (f *fakeClients) Play(rng *rand.Rand, c ClientFault) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch c.Kind {
	case ClientPause:
		f.paused++
	case ClientCrash:
		f.crashed++
	}
	return []int{rng.IntN(100)}, nil
}

func (f *fakeClients) HealClients() { f.mu.Lock(); f.heals++; f.mu.Unlock() }

func schedule(t *testing.T, seed int64, stopAfter time.Duration) ([]history.Op, *fakeClients) {
	t.Helper()
	fc := &fakeClients{}
	var mu sync.Mutex
	var ops []history.Op
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), stopAfter)
	defer cancel()
	err := Run(ctx, Config{Faults: []string{"pause-client", "crash-client"}, Interval: 40 * time.Millisecond,
		Duration: 60 * time.Millisecond, Seed: seed}, Env{Clients: fc, TTL: 100 * time.Millisecond},
		func(op history.Op) { mu.Lock(); ops = append(ops, op); mu.Unlock() },
		func() int64 { return int64(time.Since(start)) })
	if err != nil {
		t.Fatal(err)
	}
	return ops, fc
}

// TestRun_PairsAndHeals: every start is followed by the stop of the same
// fault and targets; a run cancelled mid-fault still heals it.
func TestRun_PairsAndHeals(t *testing.T) {
	// 450ms: cycles of 100ms (40 wait + 60 on), cancelled while a fault is on.
	ops, fc := schedule(t, 1, 450*time.Millisecond)
	if len(ops) < 6 || len(ops)%2 != 0 {
		t.Fatalf("got %d nemesis ops, want an even number >= 6", len(ops))
	}
	for i := 0; i < len(ops); i += 2 {
		start, stop := ops[i].Value, ops[i+1].Value
		if start.Phase != "start" || stop.Phase != "stop" || start.Fault != stop.Fault ||
			strings.Join(start.Targets, ",") != strings.Join(stop.Targets, ",") {
			t.Errorf("ops %d,%d: %+v then %+v, want start then stop of the same fault", i, i+1, start, stop)
		}
		if ops[i].Process != history.NemesisProcess || ops[i].F != history.Nemesis {
			t.Errorf("op %d: %+v is not a nemesis op", i, ops[i])
		}
	}
	if fc.heals != len(ops)/2 {
		t.Errorf("healed %d times for %d faults", fc.heals, len(ops)/2)
	}
	if fc.paused+fc.crashed != len(ops)/2 {
		t.Errorf("started %d client faults for %d windows", fc.paused+fc.crashed, len(ops)/2)
	}
}

func TestRun_SeedChoosesSchedule(t *testing.T) {
	faults := func(seed int64) string {
		ops, _ := schedule(t, seed, 450*time.Millisecond)
		var fs []string
		for _, op := range ops {
			if op.Value.Phase == "start" {
				fs = append(fs, op.Value.Fault+strings.Join(op.Value.Targets, ","))
			}
		}
		return strings.Join(fs[:3], " ")
	}
	if a, b := faults(7), faults(7); a != b {
		t.Errorf("same seed, different schedules: %q vs %q", a, b)
	}
}

func TestConfig_UnknownFault(t *testing.T) {
	if _, err := (Config{Faults: []string{"meteor"}}).WithDefaults(); err == nil || !strings.Contains(err.Error(), "unknown fault") {
		t.Errorf("got %v, want unknown fault", err)
	}
}
