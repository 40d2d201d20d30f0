package checker

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

var corpusOpts = Options{ClockTolerance: 25 * time.Millisecond, InfoHorizon: time.Second, Timeout: time.Minute}

// TestCorpus checks every history in testdata/histories against the
// verdicts VERDICTS says each checker must reach.
func TestCorpus(t *testing.T) {
	f, err := os.Open("testdata/histories/VERDICTS")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	seen := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		name := fields[0]
		seen++
		t.Run(name, func(t *testing.T) {
			ops, err := history.ReadFile(filepath.Join("testdata/histories", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			opt := corpusOpts
			opt.OutDir = t.TempDir()
			rep := Check(context.Background(), ops, opt)
			for _, kv := range fields[1:] {
				checker, want, _ := strings.Cut(kv, "=")
				got, ok := rep.Checker(checker)
				if !ok {
					t.Fatalf("no checker %q", checker)
				}
				if string(got.Verdict) != want {
					t.Errorf("%s: got %s, want %s; violations: %+v", checker, got.Verdict, want, got.Violations)
				}
				if got.Verdict == Invalid && (len(got.Violations) == 0 || got.Violations[0].Message == "") {
					t.Errorf("%s: invalid without a violation message", checker)
				}
			}
			// An invalid key always comes with its visualization.
			lin, _ := rep.Checker("linearizable")
			for _, v := range lin.Violations {
				if v.File == "" {
					t.Errorf("violation on %s has no visualization", v.Key)
				} else if _, err := os.Stat(filepath.Join(opt.OutDir, v.File)); err != nil {
					t.Errorf("visualization: %v", err)
				}
			}
		})
	}
	if seen < 30 {
		t.Errorf("corpus has %d histories, want at least 30", seen)
	}
}

func TestLinearizable_Explanation(t *testing.T) {
	ops, err := history.ReadFile("testdata/histories/acquire-ok-while-held.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := Linearizable(context.Background(), ops, corpusOpts.Resolved())
	if len(r.Violations) != 1 {
		t.Fatalf("got %d violations, want 1", len(r.Violations))
	}
	v := r.Violations[0]
	want := "p1 acquire ok at 0.101s while p0's lease a (acquired 0.000s, ttl 1s) could not yet have expired"
	if !strings.Contains(v.Message, want) {
		t.Errorf("message %q\nwant it to contain %q", v.Message, want)
	}
	if len(v.Explanation) < 2 || !strings.HasPrefix(v.Explanation[len(v.Explanation)-1], "=>") {
		t.Errorf("explanation %q: want the window ending at the marked culprit", v.Explanation)
	}
	// The fewest ops that cannot all be true (the two acquires) come
	// first, and are listed in results.json's minimal.
	if len(v.Minimal) != 2 || len(v.Explanation) < 3 || v.Explanation[0] != fewestLine || !strings.HasPrefix(v.Explanation[1], "!! ") {
		t.Errorf("violation: minimal %v, explanation %q; want the two acquires listed first", v.Minimal, v.Explanation)
	}
}

func TestLinearizable_TimeoutIsUnknownNeverValid(t *testing.T) {
	ops, err := history.ReadFile("testdata/histories/acquire-ok-free.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Linearizable(ctx, ops, corpusOpts.Resolved())
	if r.Verdict != Unknown || len(r.UnknownKeys) != 1 || r.UnknownKeys[0] != "k" {
		t.Errorf("cancelled check: got %s with unknown keys %v, want unknown [k]", r.Verdict, r.UnknownKeys)
	}
}

func TestLinearizable_AnnotatesNemesisWindows(t *testing.T) {
	ops, err := history.ReadFile("testdata/histories/clock-jump-early-expiry.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	opt := corpusOpts
	opt.OutDir = t.TempDir()
	r := Linearizable(context.Background(), ops, opt.Resolved())
	b, err := os.ReadFile(filepath.Join(opt.OutDir, r.Violations[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"clock"`) {
		t.Errorf("visualization does not carry the clock fault window")
	}
}

// TestLinearizable_ExtremeTimes: the largest times, TTL, tolerance and
// horizon a history and the options allow check and visualize without
// overflow or panic, and get the verdict the timeline gives.
func TestLinearizable_ExtremeTimes(t *testing.T) {
	end := history.MaxTime
	ops := []history.Op{
		{Index: 0, Process: 0, F: history.Acquire, Type: history.OK, Key: "k", Token: "a", TTLms: history.MaxTTLms, Call: 0, Return: 1},
		{Index: 1, Process: 1, F: history.Acquire, Type: history.Info, Key: "k", Token: "b", TTLms: history.MaxTTLms, Call: end - 1, Return: end},
		{Index: 2, Process: 2, F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 1, Call: end, Return: end},
	}
	for _, opt := range []Options{
		{ClockTolerance: MaxDuration, InfoHorizon: MaxDuration, OutDir: t.TempDir()},
		{ClockTolerance: None, InfoHorizon: None, OutDir: t.TempDir()},
	} {
		r := Check(context.Background(), ops, opt)
		lin, _ := r.Checker("linearizable")
		// b may take effect (a's lease is long gone by then), and holds the
		// key for the failed acquire: valid either way.
		if lin.Verdict != Valid {
			t.Errorf("options %+v: got %s, want valid: %+v", opt, lin.Verdict, lin.Violations)
		}
	}
}
