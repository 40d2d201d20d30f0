package golocks

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/lockimpl/process"
	"github.com/lockcheck/lockcheck/workload"
)

// TestProcessAdapters_Waits: redis-py's Lock.acquire(blocking=True,
// blocking_timeout=...), tooz's acquire(blocking=seconds), Laravel's
// cache lock block($seconds) and its funnel's block($seconds) declare twice their poll interval (100 ms,
// 250 ms: the poll, and as long again for a try's round trip and a late
// sleep on a loaded machine) as the wake-up bound, and each acquire of a run with --wait 2s is the
// library's own blocking acquire. Two workloads, each valid:
//
//   - queue: three clients on one key, holds of 700 ms: waiters wait
//     past a poll and are granted the key inside their wait.
//   - gaps: two clients on one key, holds of 200 ms and thinks of 2 ms:
//     the holder's next acquire comes back before most of the waiter's
//     polls, so the waiter runs out of its wait though the key was free
//     for a moment each cycle: 2 ms or so, inside the bound, so no
//     waiter starved; declared a bound of 1 ms (--wake-bound-ms, for
//     this test only) the same waits are starved, and the run invalid.
//
// redis-py's granted waiters say when their winning try was sent
// (tried_ms: the adapter's TimedRedis), so they are judged too, and its
// queue must have some. The PHP libraries' say nothing, so only their
// refused waiters are judged: a granted waiter's lease may be held from
// its call, and where another waiter was granted the key no span is
// certainly free. The funnel's gaps are never free at all: its release
// reports no outcome, so each lease may be held until its TTL. It runs
// the queue only.
func TestProcessAdapters_Waits(t *testing.T) {
	requirePHP(t, "/usr/share/php/Illuminate/Redis/autoload.php", "/usr/share/php/Illuminate/Cache/autoload.php")
	adapters := filepath.Join("..", "..", "examples", "adapters")
	php := filepath.Join(adapters, "php", "lock.php") + " --lib "
	queue := workload.Config{Clients: 3, Keys: 1, TTL: 2 * time.Second, Hold: 700 * time.Millisecond, HoldDist: workload.HoldFixed,
		Think: 20 * time.Millisecond, Wait: 2 * time.Second, Duration: 5 * time.Second, Seed: 1}
	gaps := queue
	gaps.Clients, gaps.Hold, gaps.Think, gaps.Duration = 2, 200*time.Millisecond, 2*time.Millisecond, 6*time.Second
	type run struct {
		name  string
		w     workload.Config
		bound string // --wake-bound-ms, "": the library's poll
	}
	for _, a := range []struct {
		name, cmd string
		perClient bool
		poll      time.Duration
		runs      []run
		tried     bool // its granted waits say when their try was sent
	}{
		{"redis-py", filepath.Join(adapters, "redispy", "lock.py"), false, 100 * time.Millisecond, []run{{"queue", queue, ""}, {"gaps", gaps, ""}, {"gaps-bound-1ms", gaps, "1"}}, true},
		{"laravel", php + "laravel", true, 250 * time.Millisecond, []run{{"queue", queue, ""}, {"gaps", gaps, ""}, {"gaps-bound-1ms", gaps, "1"}}, false},
		{"laravel-funnel", php + "laravel-funnel", true, 250 * time.Millisecond, []run{{"queue", queue, ""}}, false},
		// tooz's leases are scopes, its waiters unjudged: the queue shows
		// its acquire waits inside tooz.
		{"tooz", filepath.Join(adapters, "tooz", "lock.py"), false, 100 * time.Millisecond, []run{{"queue", queue, ""}}, false},
	} {
		for _, r := range a.runs {
			t.Run(a.name+"/"+r.name, func(t *testing.T) {
				name, cmd, want := a.name+"-"+r.name, a.cmd, checker.Valid
				if r.bound != "" {
					cmd, want = cmd+" --wake-bound-ms "+r.bound, checker.Invalid
				}
				e := process.Entry(name, cmd, "")
				if a.perClient {
					e = process.PerClientEntry(name, cmd, "")
				}
				res := lockchecktest.Run(t, name, e.Factory, lockchecktest.Options{Workload: r.w, Want: want})
				ops, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				wakeMs := 2 * a.poll.Milliseconds()
				if r.bound != "" {
					wakeMs = -1 // not the library's: any
				}
				waits, refused, grantedAfterPoll, tried := countWaits(t, ops, r.w.Wait, a.poll, wakeMs)
				l, _ := res.Findings.Checker("liveness")
				starved := l.Figures["starved_waiters"]
				t.Logf("%s: %d blocking acquires, %d granted after more than a poll, %d saying when they tried, %d refused; liveness %s, %v", name, waits, grantedAfterPoll, tried, refused, l.Verdict, l.Figures)
				switch {
				case waits == 0:
					t.Fatalf("%s: no acquire carried wait_ms", name)
				case r.name == "queue" && grantedAfterPoll == 0:
					t.Errorf("%s: no waiter was granted the key after more than a poll (%v)", name, a.poll)
				case a.tried && (tried == 0 || l.Figures["blocking_acquires"] <= int64(refused)):
					t.Errorf("%s: %d granted waits say when they tried, %d waits judged of %d refused; want granted ones judged too", name, tried, l.Figures["blocking_acquires"], refused)
				case !a.tried && tried != 0:
					t.Errorf("%s: %d granted waits say when they tried; its library does not say", name, tried)
				case r.name != "queue" && l.Figures["blocking_acquires"] == 0:
					t.Errorf("%s: %d refused waits, none judged; want some judged (refused ones, or granted ones that say when they tried)", name, refused)
				case r.bound == "" && starved != 0:
					t.Errorf("%s: %d starved waiters; want none", name, starved)
				case r.bound != "" && (starved == 0 || l.Verdict != checker.Invalid):
					t.Errorf("%s: %d starved waiters (liveness %s); want some under a bound of %s ms", name, starved, l.Verdict, r.bound)
				}
			})
		}
	}
}

// countWaits counts the blocking acquires of ops, those refused, those
// granted after more than a poll (found the key taken, slept, tried again
// and took it) and those that say when they tried; each must carry wait
// and, unless wakeMs is -1, declare wakeMs as its bound.
func countWaits(t *testing.T, ops []history.Op, wait, poll time.Duration, wakeMs int64) (waits, refused, grantedAfterPoll, tried int) {
	t.Helper()
	for _, op := range ops {
		if op.F != history.Acquire || op.WaitMs == 0 {
			continue
		}
		waits++
		if op.Tried != 0 {
			tried++
		}
		if op.WaitMs != wait.Milliseconds() || wakeMs >= 0 && op.WakeMs != wakeMs {
			t.Fatalf("a blocking acquire with wait_ms %d, wake_ms %d; want %d and the declared bound, %d", op.WaitMs, op.WakeMs, wait.Milliseconds(), wakeMs)
		}
		switch span := time.Duration(op.Return - op.Call); {
		case op.Type == history.OK && span > poll:
			grantedAfterPoll++
		case op.Type == history.Fail:
			refused++
		}
	}
	return waits, refused, grantedAfterPoll, tried
}
