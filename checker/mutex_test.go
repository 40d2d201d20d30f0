package checker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

func w(idx int64, p int, key, tok string, call, ret int64) history.Op {
	return history.Op{Index: idx, Process: p, F: history.Write, Type: history.OK, Key: key, Token: tok, Call: call, Return: ret}
}

func TestMutex_Check(t *testing.T) {
	tests := []struct {
		name string
		ops  []history.Op
		want int // violations
	}{
		{"disjoint", []history.Op{w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 10, 20)}, 0},
		{"overlap", []history.Op{w(0, 1, "k", "a", 0, 10), w(1, 2, "k", "b", 9, 20)}, 1},
		{"other key", []history.Op{w(0, 1, "x", "a", 0, 10), w(1, 2, "y", "b", 5, 20)}, 0},
		{"long write covers two", []history.Op{w(0, 1, "k", "a", 0, 100), w(1, 2, "k", "b", 10, 20), w(2, 3, "k", "c", 30, 40)}, 2},
		{"same lease twice", []history.Op{w(0, 1, "k", "a", 0, 10), w(1, 1, "k", "a", 5, 20)}, 0},
		{"same value, two clients", []history.Op{w(0, 1, "k", "v", 0, 10), w(1, 2, "k", "v", 5, 20)}, 1},
		{"rejected write ignored", []history.Op{w(0, 1, "k", "a", 0, 10), {Index: 1, Process: 2, F: history.Write, Type: history.Fail, Key: "k", Token: "b", Call: 5, Return: 6}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Mutex(tt.ops)
			if r.ViolationCount != tt.want {
				t.Errorf("got %d violations (%+v), want %d", r.ViolationCount, r.Violations, tt.want)
			}
			if (r.Verdict == Invalid) != (tt.want > 0) {
				t.Errorf("verdict %s with %d violations", r.Verdict, r.ViolationCount)
			}
		})
	}
}

func TestCompose(t *testing.T) {
	tests := []struct {
		in   []Verdict
		want Verdict
	}{
		{[]Verdict{Valid, Valid}, Valid},
		{[]Verdict{Valid, Unknown}, Unknown},
		{[]Verdict{Unknown, Invalid}, Invalid},
	}
	for _, tt := range tests {
		if got := Compose(tt.in...); got != tt.want {
			t.Errorf("Compose(%v): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestStats_NoAcquireIsInvalid(t *testing.T) {
	ops := []history.Op{{F: history.Acquire, Type: history.Fail, Key: "k", TTLms: 1}}
	if r := Stats(ops); r.Verdict != Invalid {
		t.Errorf("got %s, want invalid", r.Verdict)
	}
}

// TestCheckWith_AddedChecker: a checker registered beside the built-in
// ones is run, named, timed and composed into the verdict.
func TestCheckWith_AddedChecker(t *testing.T) {
	ops := genHistory(3, 2, 3, 50, time.Second)
	builtin := len(All())
	unregister := Register(Spec{Check: Func("never", func(context.Context, []history.Op, Options) Result { return Result{Verdict: Invalid} })})
	rep := Check(context.Background(), ops, Options{})
	unregister()
	got, ok := rep.Checker("never")
	if !ok || got.Verdict != Invalid || got.Elapsed == "" {
		t.Fatalf("added checker: got %+v (found %v), want it invalid and timed", got, ok)
	}
	if rep.Verdict != Invalid {
		t.Errorf("report verdict %s, want invalid: an added checker's verdict counts", rep.Verdict)
	}
	if base := Check(context.Background(), ops, Options{}); base.Verdict != Valid || len(base.Checkers) != builtin {
		t.Errorf("built-in checkers alone: %s with %d checkers, want valid with %d", base.Verdict, len(base.Checkers), builtin)
	}
}

// TestStats_NoAcquire: a history with no successful acquire is invalid,
// and one whose acquires all went unanswered says so, naming the lock's
// silence (a lock process that never replies) rather than only Redis.
func TestStats_NoAcquire(t *testing.T) {
	info := []history.Op{covOp(history.Acquire, history.Info, 1, "a", 0, 500), covOp(history.Acquire, history.Info, 2, "b", 0, 500)}
	if r := Stats(info); r.Verdict != Invalid || !strings.Contains(r.Violations[0].Message, "all 2 ended indeterminate") {
		t.Errorf("all unanswered: %s %+v", r.Verdict, r.Violations)
	}
	refused := []history.Op{covOp(history.Acquire, history.Fail, 1, "", 0, 1)}
	if r := Stats(refused); r.Verdict != Invalid || !strings.Contains(r.Violations[0].Message, "is Redis reachable") {
		t.Errorf("all refused: %s %+v", r.Verdict, r.Violations)
	}
}
