package harness

import (
	"os"
	"runtime"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// procsTuner chooses the clients' GOMAXPROCS by measuring, in the first
// part of a run (lockcheck bench's warmup). On a machine a local
// redis-server shares, the second P costs it throughput at low
// concurrency: every reply readies a goroutine that another thread must
// be woken to run, and those wakeups leave the server waiting (50
// clients on 2 cores: one P gave 12% more acquisitions/s and the server
// 81% of a core instead of 68%). At high concurrency the clients need
// every core (2,000 clients: one P gave 22% fewer). So it measures both.
type procsTuner struct {
	window    time.Duration
	acquired  func() int64
	original  int
	chosen    chan int
	stop      chan struct{}
	candidate []int
}

// minTune is the shortest tuning period that measures anything: below
// it the run keeps its GOMAXPROCS.
const minTune = 500 * time.Millisecond

// newProcsTuner tunes over d, counting acquisitions with acquired. It
// returns nil when there is nothing to choose: one CPU, d under minTune,
// or GOMAXPROCS set by the user.
func newProcsTuner(d time.Duration, acquired func() int64) *procsTuner {
	n := runtime.GOMAXPROCS(0)
	if d < minTune || n < 2 || os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	return &procsTuner{window: d / 5, acquired: acquired, original: n,
		chosen: make(chan int, 1), stop: make(chan struct{}), candidate: []int{1, n}}
}

// run settles for one window at the original GOMAXPROCS, then measures
// each candidate in two windows, interleaved, and keeps the one with
// more acquisitions; one P must win by 3% to be kept, so that a tie
// (a run bound by its holds, not its clients) keeps every core.
func (t *procsTuner) run() {
	defer close(t.chosen)
	got := make([]int64, len(t.candidate))
	if !t.sleep() {
		return
	}
	for round := 0; round < 2; round++ {
		for i, p := range t.candidate {
			runtime.GOMAXPROCS(p)
			before := t.acquired()
			if !t.sleep() {
				runtime.GOMAXPROCS(t.original)
				return
			}
			got[i] += t.acquired() - before
		}
	}
	best := t.original
	if float64(got[0]) > 1.03*float64(got[1]) {
		best = t.candidate[0]
	}
	runtime.GOMAXPROCS(best)
	t.chosen <- best
}

func (t *procsTuner) sleep() bool {
	select {
	case <-t.stop:
		return false
	case <-time.After(t.window):
		return true
	}
}

// end stops the tuning if it is still going, restores the original
// GOMAXPROCS for what follows the clients (the check), and returns what
// the clients ran at after tuning (the original if tuning did not end).
func (t *procsTuner) end() int {
	close(t.stop)
	p, ok := <-t.chosen
	runtime.GOMAXPROCS(t.original)
	if !ok {
		return t.original
	}
	return p
}

// okAcquires counts the ok acquires a history writer has written.
func okAcquires(hw *history.Writer) func() int64 {
	return func() int64 { return hw.Counts()[history.Acquire][history.OK] }
}
