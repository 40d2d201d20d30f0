package shrink

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// drawingClients plays a client fault by naming the clients its window's
// source draws: what a window's targets come from.
type drawingClients struct{}

func (drawingClients) Play(rng *rand.Rand, f nemesis.ClientFault) ([]int, error) {
	return []int{rng.IntN(1000), rng.IntN(1000)}, nil
}
func (drawingClients) HealClients() {}

// starts runs the schedule n to its end (its windows all played) and
// returns each window's start op: its fault and its targets.
func starts(t *testing.T, n nemesis.Config) []history.NemesisValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var got []history.NemesisValue
	t0 := time.Now()
	err := nemesis.Run(ctx, n, nemesis.Env{Clients: drawingClients{}, TTL: 10 * time.Millisecond}, func(op history.Op) {
		mu.Lock()
		defer mu.Unlock()
		if v := op.Value; v != nil && v.Phase == "start" {
			got = append(got, *v)
		}
	}, func() int64 { return int64(time.Since(t0)) })
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the schedule's %d windows not played within a minute", len(n.Windows))
	}
	return got
}

// TestShrink_RemovalKeepsTheRest: a plan without a client leaves every
// other client's draws (its keys and holds) as they were, and a plan
// without a window plays every other window as it was: the same fault
// on the same targets.
func TestShrink_RemovalKeepsTheRest(t *testing.T) {
	w, err := workload.Config{Clients: 10, Keys: 5, Seed: 1, Duration: 2 * time.Second, Hold: 50 * time.Millisecond}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n, err := nemesis.Config{Faults: []string{"pause-client", "crash-client"}, Interval: 20 * time.Millisecond,
		Duration: 10 * time.Millisecond, Seed: 1}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	whole := From([]string{"lockcheck", "run"}, w, n)
	if got := whole.Size(); got.Clients != 10 || got.Windows < 10 {
		t.Fatalf("plan of 10 clients over 2s of a window every 30ms: %v", got)
	}
	for _, drop := range []int{0, 3, 9} {
		cut := whole.WithoutClients(drop)
		cw, cn := w, n
		cut.Apply(&cw, &cn)
		for slot, stream := range cut.Clients {
			if got, want := workload.Draws(cw, slot, 100), workload.Draws(w, stream, 100); !slices.Equal(got, want) {
				t.Errorf("client %d dropped: client of stream %d drew %v, want %v", drop, stream, got[:3], want[:3])
			}
		}
	}

	n.Windows = whole.Windows[:8]
	all := starts(t, n)
	if len(all) != 8 {
		t.Fatalf("8 windows planned, %d started", len(all))
	}
	if slices.EqualFunc(all[1:], all[:7], func(a, b history.NemesisValue) bool { return slices.Equal(a.Targets, b.Targets) }) {
		t.Fatalf("every window picked the same targets %v: the test cannot tell them apart", all[0].Targets)
	}
	for _, drop := range []int{0, 4, 7} {
		cut := whole.Clone()
		cut.Windows = cut.Windows[:8]
		cut = cut.WithoutWindows(drop)
		cw, cn := w, n
		cut.Apply(&cw, &cn)
		got := starts(t, cn)
		want := slices.Delete(slices.Clone(all), drop, drop+1)
		if len(got) != len(want) {
			t.Fatalf("window %d dropped: %d windows started, want %d", drop, len(got), len(want))
		}
		for i := range want {
			if got[i].Fault != want[i].Fault || !slices.Equal(got[i].Targets, want[i].Targets) {
				t.Errorf("window %d dropped: window %d was %s on %v, want %s on %v", drop, cut.Windows[i].ID, got[i].Fault, got[i].Targets, want[i].Fault, want[i].Targets)
			}
		}
	}
}
