package checker

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestCrashedFull_CountsTheChance: a semaphore of 2 whose holder p1 is
// last seen while p2 also surely holds, then never releases, and whose
// key is tried after p1's lease surely expired, counts once; not where
// p2 had begun its release before p1 was last seen (the key was not
// surely full), nor where no one tried the key afterwards, nor on a
// mutex's history (no such figure).
func TestCrashedFull_CountsTheChance(t *testing.T) {
	const ms = int64(time.Millisecond)
	acq := func(p int, tok string, call int64) history.Op {
		return history.Op{Process: p, F: history.Acquire, Type: history.OK, Key: "k", Token: tok, TTLms: 100, Permits: 2, Call: call, Return: call + ms}
	}
	op := func(p int, f history.Func, tok string, call int64) history.Op {
		return history.Op{Process: p, F: f, Type: history.OK, Key: "k", Token: tok, Call: call, Return: call + ms}
	}
	build := func(releaseB int64, tryAfter bool, permits int) []history.Op {
		ops := []history.Op{acq(1, "a", 0), acq(2, "b", 0), op(1, history.Write, "a", 2*ms), op(2, history.Release, "b", releaseB)}
		if tryAfter {
			ops = append(ops, acq(3, "c", 500*ms))
		}
		for i := range ops {
			ops[i].Index = int64(i)
			if ops[i].F == history.Acquire {
				ops[i].Permits = permits
			}
		}
		return ops
	}
	o := Options{}.Resolved()
	for _, c := range []struct {
		name     string
		releaseB int64
		try      bool
		permits  int
		want     int
		has      bool
	}{
		{"full, then tried", 50 * ms, true, 2, 1, true},
		{"p2 releasing", 2 * ms, true, 2, 0, true},
		{"never tried after", 50 * ms, false, 2, 0, true},
		{"a mutex's history", 50 * ms, true, 1, 0, false},
	} {
		got, has := CoverageOf(build(c.releaseB, c.try, c.permits), o)[CrashedFull]
		if got != c.want || has != c.has {
			t.Errorf("%s: crashed_full %d (present %v), want %d (present %v)", c.name, got, has, c.want, c.has)
		}
	}
}
