package harness

import (
	"runtime"
	"testing"
	"time"
)

// TestProcsTuner: the tuner keeps the GOMAXPROCS under which the clients
// acquired more, keeps every P on a tie or a small lead of one P (under
// its 3% margin), leaves GOMAXPROCS as it found it, and does nothing when
// there is too little time to measure or the user set GOMAXPROCS. The
// clients are a counter whose rate depends on the GOMAXPROCS in force.
func TestProcsTuner(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	orig := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(orig)
	for _, c := range []struct {
		name     string
		one, all int64
		want     int
	}{
		{"one P faster", 112, 100, 1},
		{"all faster", 78, 100, 2},
		{"tie", 100, 100, 2},
		{"one P within the margin", 102, 100, 2},
	} {
		var n int64
		acquired := func() int64 {
			if runtime.GOMAXPROCS(0) == 1 {
				n += c.one
			} else {
				n += c.all
			}
			return n
		}
		tu := newProcsTuner(minTune, acquired)
		if tu == nil {
			t.Fatalf("%s: no tuner with GOMAXPROCS 2 and %v", c.name, minTune)
		}
		tu.run()
		if got := tu.end(); got != c.want {
			t.Errorf("%s: chose GOMAXPROCS %d, want %d", c.name, got, c.want)
		}
		if p := runtime.GOMAXPROCS(0); p != 2 {
			t.Errorf("%s: GOMAXPROCS %d after end, want 2 back", c.name, p)
		}
	}

	// Stopped before it measured (a run shorter than its warm-up): the
	// clients ran at the original.
	tu := newProcsTuner(time.Minute, func() int64 { return 0 })
	go tu.run()
	if got := tu.end(); got != 2 || runtime.GOMAXPROCS(0) != 2 {
		t.Errorf("stopped early: chose %d, GOMAXPROCS %d; want 2, 2", got, runtime.GOMAXPROCS(0))
	}

	if newProcsTuner(minTune-time.Millisecond, nil) != nil {
		t.Errorf("tuner under %v, want none", minTune)
	}
	t.Setenv("GOMAXPROCS", "2")
	if newProcsTuner(time.Minute, nil) != nil {
		t.Errorf("tuner with GOMAXPROCS set by the user, want none")
	}
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(1)
	if newProcsTuner(time.Minute, nil) != nil {
		t.Errorf("tuner with one P, want none")
	}
}
