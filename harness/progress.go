package harness

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// runWithProgress runs the workload, printing a progress line each second.
// A panic that escapes the workload (it recovers its clients') still
// leaves through the deferred cleanup in Run.
func runWithProgress(ctx context.Context, play func(context.Context) error, w io.Writer, clock *history.Clock, hw *history.Writer) (err error) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if w != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			line := report.NewProgress(w)
			var prev int64
			for {
				select {
				case <-stop:
					line.End()
					return
				case <-t.C:
					c := hw.Counts()
					total := c.Total()
					ok, fail, info := byType(c)
					line.Update(float64(clock.Now())/1e9, total-prev, ok, fail, info)
					prev = total
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		if p := recover(); p != nil {
			err = fmt.Errorf("workload panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return play(ctx)
}

func byType(c history.Counts) (ok, fail, info int64) {
	for _, m := range c {
		ok += m[history.OK]
		fail += m[history.Fail]
		info += m[history.Info]
	}
	return
}

// PeakRSS returns this process's peak resident set size, in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// sayOnce passes say its first line only (a process per client, each slow
// to start, says the same thing).
func sayOnce(say func(string)) func(string) {
	if say == nil {
		return nil
	}
	var once sync.Once
	return func(s string) { once.Do(func() { say(s) }) }
}
