package checker

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Why a key is undecided.
const (
	OutOfTime   = "timeout"
	OutOfMemory = "memory"
	// LooseClock: ops recorded on other machines' clocks carry a
	// clock_bound too wide for the key's TTL (over MaxBoundOfTTL of it):
	// nothing sound can be said of expiry.
	LooseClock = "clock"
	// Interrupted: the check was stopped (Ctrl-C, SIGTERM) before the
	// key was decided.
	Interrupted = "interrupted"
)

// MaxBoundOfTTL is the widest clock_bound, as a fraction of the TTL,
// under which a key is judged: a bound of a quarter TTL each side already
// blurs every lease's end by half of it.
const MaxBoundOfTTL = 0.25

// Undecided is a key a checker could not decide, and what made it hard,
// so that unknown is never a dead end.
type Undecided struct {
	Key    string `json:"key"`
	Reason string `json:"reason"` // OutOfTime, OutOfMemory, LooseClock or Interrupted
	// Bound is the widest clock_bound of the key's ops, and TTL the
	// shortest TTL it blurs (LooseClock), in ns.
	Bound int64 `json:"clock_bound,omitempty"`
	TTL   int64 `json:"ttl,omitempty"`
	// LockOps and InfoOps count the key's lock ops and the indeterminate
	// ones among them; InfoWindow is the span of history time (ns) in
	// which those may have taken effect, from the first one's call to the
	// last one's return plus the horizon.
	LockOps    int      `json:"lock_ops"`
	InfoOps    int      `json:"info_ops"`
	InfoWindow [2]int64 `json:"info_window"`
	ElapsedMS  int64    `json:"elapsed_ms"`
}

func (u Undecided) String() string {
	why := "ran out of --check-timeout"
	switch u.Reason {
	case OutOfMemory:
		why = "ran out of its share of --check-memory"
	case Interrupted:
		why = "not decided when the check was interrupted"
	case LooseClock:
		return fmt.Sprintf("%s not judged: its ops' clocks are known only within ±%v, more than %.0f%% of its TTL %v (the clocks are too loose to judge this TTL)",
			u.Key, time.Duration(u.Bound), MaxBoundOfTTL*100, time.Duration(u.TTL))
	}
	s := fmt.Sprintf("%s %s after %v: %d lock ops", u.Key, why, time.Duration(u.ElapsedMS)*time.Millisecond, u.LockOps)
	if u.InfoOps > 0 {
		s += fmt.Sprintf(", %d indeterminate, which may take effect over %s..%s", u.InfoOps,
			history.Seconds(u.InfoWindow[0]), history.Seconds(u.InfoWindow[1]))
	}
	return s
}

// undecided describes key, whose ops are lops, left undecided for reason.
func undecided(key string, lops []*lockOp, reason string, elapsed time.Duration) Undecided {
	u := Undecided{Key: key, Reason: reason, LockOps: len(lops), ElapsedMS: elapsed.Milliseconds()}
	for _, lo := range lops {
		if lo.typ != history.Info {
			continue
		}
		if u.InfoOps == 0 {
			u.InfoWindow = [2]int64{lo.call, lo.ret}
		}
		u.InfoOps++
		u.InfoWindow = [2]int64{min(u.InfoWindow[0], lo.call), max(u.InfoWindow[1], lo.ret)}
	}
	return u
}

// undecidedNote says how many keys are undecided and what to change.
func undecidedNote(us []Undecided) string {
	var time, mem, loose, stopped, info int
	for _, u := range us {
		switch u.Reason {
		case OutOfMemory:
			mem++
		case LooseClock:
			loose++
		case Interrupted:
			stopped++
		default:
			time++
		}
		info += u.InfoOps
	}
	if stopped == len(us) {
		return fmt.Sprintf("%d key(s) undecided: the check was interrupted; check the run again to decide them (lockcheck check DIR)", len(us))
	}
	var fix []string
	if loose > 0 {
		fix = append(fix, "clocks known more tightly (agents nearer the coordinator, a better time sync) or a longer --ttl")
	}
	if time > 0 {
		fix = append(fix, "a longer --check-timeout")
	}
	if mem > 0 {
		fix = append(fix, "a larger --check-memory")
	}
	if info > 0 {
		fix = append(fix, "a shorter --info-horizon (how long after it returned an indeterminate op may take effect) or --op-timeout")
	}
	fix = append(fix, "fewer clients per key (more --keys, or fewer --clients)")
	if stopped > 0 {
		fix = append(fix, "checking again without an interrupt (lockcheck check DIR)")
	}
	return fmt.Sprintf("%d key(s) undecided (%d out of time, %d out of memory, %d with clocks too loose, %d interrupted); try %s", len(us), time, mem, loose, stopped, strings.Join(fix, ", "))
}

// DefaultMemory is the default Options.Memory: a quarter of the
// machine's RAM, at most MaxDefaultMemory. The check shares the machine
// with Redis, the run's clients and whatever else runs there (a CI
// job's other tests): half the RAM, the old default, let one key's
// search take the machine to swap beside them. The bound is of the
// process's memory (memWatch), so it holds.
func DefaultMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 4 << 30
	}
	return min(int64(si.Totalram)*int64(si.Unit)/4, MaxDefaultMemory)
}

// MaxDefaultMemory caps DefaultMemory.
const MaxDefaultMemory = 8 << 30
