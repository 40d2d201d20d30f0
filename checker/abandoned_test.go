package checker

import (
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func TestAbandoned(t *testing.T) {
	A, R, W := history.Acquire, history.Release, history.Write
	ok, fail := history.OK, history.Fail
	ops := []history.Op{
		// a: released, not abandoned.
		covOp(A, ok, 1, "a", 0, 1), covOp(W, ok, 1, "a", 2, 40), covOp(R, ok, 1, "a", 41, 42),
		// b: wrote until 80, never released; c acquired at 150 after a
		// refused attempt at 100.
		covOp(A, ok, 2, "b", 50, 51), covOp(W, ok, 2, "b", 52, 80),
		covOp(A, fail, 3, "c", 100, 101), covOp(A, ok, 3, "c", 149, 150), covOp(R, fail, 3, "c", 160, 161),
		// d: no write, never released; e takes the key at 600 without
		// being refused first: no one was seen waiting on d.
		covOp(A, ok, 4, "d", 200, 202), covOp(A, ok, 5, "e", 600, 601), covOp(R, ok, 5, "e", 610, 611),
		// f: never released; g is refused at 720 and 760, and the run
		// ends before anyone else holds the key.
		covOp(A, ok, 6, "f", 700, 701), covOp(A, fail, 7, "g", 720, 721), covOp(A, fail, 7, "g", 760, 771),
	}
	got := Abandoned(ops)
	// b's key was seen unavailable until c's refusal returned at 101 (c's
	// grant at 150 came after a gap in which no one asked).
	want := []Stall{{Key: "k", Token: "b", From: 80e6, To: 101e6}, {Key: "k", Token: "d", From: 202e6, To: -1},
		{Key: "k", Token: "f", From: 701e6, To: 771e6}}
	if !slices.Equal(got, want) {
		t.Fatalf("Abandoned = %+v, want %+v", got, want)
	}
	// The liveness checker reports them as figures.
	res := Liveness(ops, Options{}.Resolved())
	if res.Figures["abandoned_leases"] != 3 || res.Figures["longest_abandoned_stall_ms"] != 70 {
		t.Errorf("liveness figures %v, want 3 abandoned leases and a 70 ms stall (f's)", res.Figures)
	}
}

func TestGrantedWhileDown(t *testing.T) {
	A := history.Acquire
	ok, fail := history.OK, history.Fail
	nem := func(fault, phase string, call, ret int64) history.Op {
		return history.Op{F: history.Nemesis, Type: history.Info, Process: history.NemesisProcess, Call: call * 1e6, Return: ret * 1e6,
			Value: &history.NemesisValue{Fault: fault, Phase: phase, Targets: []string{"n1"}}}
	}
	ops := []history.Op{
		covOp(A, ok, 1, "a", 90, 95),        // 0: before the kill returned: may have been before it
		nem("kill-redis", "start", 90, 100), // 1: down from 100
		covOp(A, ok, 2, "b", 120, 121),      // 2: granted while down
		covOp(A, fail, 3, "c", 130, 131),    // 3: refused: no grant
		covOp(A, ok, 4, "d", 290, 310),      // 4: returned after the restart began: may be after it
		nem("kill-redis", "stop", 300, 320), // 5: up again from 300 at the earliest
		covOp(A, ok, 5, "e", 400, 401),      // 6
		nem("pause-redis", "start", 500, 501),
		covOp(A, ok, 6, "f", 510, 511), // another fault: not counted
		nem("pause-redis", "stop", 600, 601),
	}
	if got := GrantedWhileDown(ops, "kill-redis"); !slices.Equal(got, []int{2}) {
		t.Errorf("GrantedWhileDown(kill-redis) = %v, want [2]", got)
	}
	if got := GrantedWhileDown(ops, "pause-redis"); !slices.Equal(got, []int{8}) {
		t.Errorf("GrantedWhileDown(pause-redis) = %v, want [8]", got)
	}
}
