package shrink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

var (
	target = Finding{Checker: "mutex", Guarantee: "mutex", Kind: "double holder"}
	other  = Finding{Checker: "linearizable", Guarantee: "lease", Kind: "nothing held it"}
)

// bug is a lock's break as a trial sees it: plans with clients of
// streams 3 and 7 and window 2, at least 250 ms long, break with target;
// plans with 3 and not 7 break with another finding; the rest do not
// break.
type bug struct {
	mu     sync.Mutex
	tried  []Plan
	stopAt int // cancel after this many trials (0: never)
	cancel context.CancelFunc
}

func (b *bug) trial(ctx context.Context, p Plan) (Outcome, error) {
	b.mu.Lock()
	b.tried = append(b.tried, p)
	if b.stopAt > 0 && len(b.tried) == b.stopAt {
		b.cancel()
	}
	b.mu.Unlock()
	has3, has7 := slices.Contains(p.Clients, 3), slices.Contains(p.Clients, 7)
	w2 := slices.ContainsFunc(p.Windows, func(w nemesis.Window) bool { return w.ID == 2 && w.Length >= 250*time.Millisecond })
	switch {
	case has3 && has7 && w2:
		return Outcome{Breaks: []Break{{target, int64(10 * time.Second)}}}, nil
	case has3 && !has7:
		return Outcome{Breaks: []Break{{other, int64(10 * time.Second)}}}, nil
	}
	return Outcome{}, nil
}

func wide() Plan {
	p := Plan{Args: []string{"lockcheck", "run"}, Seed: 1, Keys: 5, Duration: 20 * time.Second}
	for i := range 20 {
		p.Clients = append(p.Clients, i)
	}
	for i := range 6 {
		p.Windows = append(p.Windows, nemesis.Window{ID: i, Fault: "pause-client", Start: time.Duration(i+1) * 3 * time.Second, Length: time.Second})
	}
	return p
}

// TestShrink_SameFindingOnly: the shrink ends at the smallest plan that
// breaks with the original's finding (clients 3 and 7, window 2, one
// key, the length cut past the break); candidates that broke with
// another finding were run and none was kept.
func TestShrink_SameFindingOnly(t *testing.T) {
	b := &bug{}
	res, err := Shrink(context.Background(), Config{From: wide(), Target: target, BreakAt: int64(10 * time.Second), Trial: b.trial, Runs: 2, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := res.After
	if !slices.Equal(got.Clients, []int{3, 7}) || len(got.Windows) != 1 || got.Windows[0].ID != 2 || got.Keys != 1 {
		t.Errorf("shrunk to clients %v, windows %v, %d keys; want clients [3 7], window 2, 1 key", got.Clients, got.Windows, got.Keys)
	}
	if got.Duration >= 20*time.Second {
		t.Errorf("duration %v: not cut past the break at 10s", got.Duration)
	}
	// Window 2 (9 s, 1 s long) halved while it breaks: 500 ms, 250 ms, not
	// 125 ms; moved to half its start while it breaks, down to 140.625 ms
	// (281.25 ms, 70.3125 ms under the floor).
	if len(got.Windows) == 1 && (got.Windows[0].Length != 250*time.Millisecond || got.Windows[0].Start != 140625*time.Microsecond) {
		t.Errorf("window 2 shrunk to %v at %v; want 250ms at 140.625ms", got.Windows[0].Length, got.Windows[0].Start)
	}
	others := 0
	for _, p := range b.tried {
		if slices.Contains(p.Clients, 3) && !slices.Contains(p.Clients, 7) {
			others++
		}
	}
	if others == 0 {
		t.Fatal("no candidate broke with another finding: the test shows nothing")
	}
	if res.Reproduced != 2 || res.Measured != 2 {
		t.Errorf("reproduced %d of %d, want 2 of 2", res.Reproduced, res.Measured)
	}
}

// TestShrink_ResumesFromState: a shrink interrupted midway leaves its
// state; run again with it, it starts from the best plan so far (its
// first run is of no plan the first shrink ran before its best), and
// ends where an uninterrupted shrink ends.
func TestShrink_ResumesFromState(t *testing.T) {
	whole := &bug{}
	want, err := Shrink(context.Background(), Config{From: wide(), Target: target, BreakAt: int64(10 * time.Second), Trial: whole.trial, Runs: 2, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "shrink-state.json")
	ctx, cancel := context.WithCancel(context.Background())
	first := &bug{stopAt: len(whole.tried) / 2, cancel: cancel}
	cfg := Config{From: wide(), Target: target, BreakAt: int64(10 * time.Second), Trial: first.trial, Runs: 2, Budget: time.Minute, State: state}
	part, err := Shrink(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted shrink: %v, want ErrInterrupted", err)
	}
	if part.After.Size() == wide().Size() {
		t.Fatalf("interrupted after %d runs with nothing cut: the test shows nothing", len(first.tried))
	}
	second := &bug{}
	var log bytes.Buffer
	cfg.Trial, cfg.Log = second.trial, &log
	got, err := Shrink(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "shrink: resuming from "+state) {
		t.Errorf("second shrink does not say it resumes:\n%s", log.String())
	}
	if len(second.tried) == 0 || second.tried[0].Key() == wide().Key() {
		t.Errorf("resumed shrink ran the original plan first")
	}
	if got.After.Key() != want.After.Key() {
		t.Errorf("resumed shrink ended at %v, an uninterrupted one at %v", got.After.Size(), want.After.Size())
	}
	if got.Runs >= len(first.tried)+len(second.tried)+1 || len(second.tried) >= len(whole.tried) {
		t.Errorf("resumed: %d runs counted, %d+%d made; uninterrupted %d", got.Runs, len(first.tried), len(second.tried), len(whole.tried))
	}
}

// rare breaks every run while a plan has 4 clients or more, and in one
// run of 3 with fewer: a smaller plan that breaks far less often.
type rare struct {
	mu   sync.Mutex
	runs map[string]int
}

func (r *rare) trial(_ context.Context, p Plan) (Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[p.Key()]++
	if len(p.Clients) >= 4 || r.runs[p.Key()]%3 == 0 {
		return Outcome{Breaks: []Break{{target, int64(10 * time.Second)}}}, nil
	}
	return Outcome{}, nil
}

// TestShrink_KeepsTheRate: the original breaks in 3 of 3 runs, so a
// candidate must break in 2 of its 3: the plans of fewer than 4 clients,
// which break in 1 of 3 (the third, which one break would have kept),
// are run until 2 of 3 is out of reach and not kept.
func TestShrink_KeepsTheRate(t *testing.T) {
	r := &rare{runs: map[string]int{}}
	res, err := Shrink(context.Background(), Config{From: wide(), Target: target, BreakAt: int64(10 * time.Second), Trial: r.trial, Runs: 3, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Baseline != 3 || res.BaselineRuns != 3 {
		t.Errorf("baseline %d of %d, want 3 of 3", res.Baseline, res.BaselineRuns)
	}
	if n := len(res.After.Clients); n != 4 {
		t.Errorf("shrunk to %d clients, want 4 (fewer break in 1 run of 3)", n)
	}
	fewer := 0
	for key, n := range r.runs {
		var p Plan
		if err := json.Unmarshal([]byte(key), &p); err == nil && len(p.Clients) < 4 && n >= 2 {
			fewer++
		}
	}
	if fewer == 0 {
		t.Fatal("no plan of fewer than 4 clients ran 2 runs (its third would have broken): the test shows nothing")
	}
}

// TestShrink_MovesNoWindowBeforeItsPredecessor: windows are played in
// order, so a window is moved no earlier than the end of the one before
// it, and one that cannot move stays where it was.
func TestShrink_MovesNoWindowBeforeItsPredecessor(t *testing.T) {
	p := Plan{Args: []string{"lockcheck", "run"}, Seed: 1, Keys: 1, Clients: []int{0}, Duration: 20 * time.Second,
		Windows: []nemesis.Window{{ID: 0, Fault: "pause-client", Start: 4 * time.Second, Length: 3 * time.Second},
			{ID: 1, Fault: "pause-client", Start: 10 * time.Second, Length: time.Second}}}
	always := func(context.Context, Plan) (Outcome, error) {
		return Outcome{Breaks: []Break{{target, int64(time.Second)}}}, nil
	}
	s := &shrinker{cfg: Config{Trial: always, Target: target}, runs: 1, log: &bytes.Buffer{}, st: state{Best: p, Tried: map[string]tally{}, Need: 1}}
	if err := s.moveWindows(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := s.st.Best.Windows
	// Window 0: 4 s -> 2 s -> 1 s -> 500 ms -> 250 ms -> 125 ms (62.5 ms
	// is under the floor); window 1: 10 s -> 5 s, not 2.5 s, which is
	// before window 0 ends (3.125 s).
	if w[0].Start != 125*time.Millisecond || w[1].Start != 5*time.Second {
		t.Errorf("moved to %v and %v; want 125ms and 5s (window 1 not before window 0's end)", w[0].Start, w[1].Start)
	}
}
