// Package history defines the operation record that every stage of lockcheck
// reads and writes, and its JSON-lines codec.
//
// A history file holds one JSON object per line, one line per completed
// operation; README.md "Reading a run" gives its fields and rules.
package history

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Func names what an operation did.
type Func string

// The operation kinds of a history.
const (
	Acquire Func = "acquire"
	Release Func = "release"
	Extend  Func = "extend"
	Write   Func = "write"
	Nemesis Func = "nemesis"
)

// Type is the outcome of an operation.
type Type string

// Outcomes: OK happened, Fail definitely did not happen, Info may or may not
// have happened.
const (
	OK   Type = "ok"
	Fail Type = "fail"
	Info Type = "info"
)

// ExtendAdd is the Mode of an extend that adds its TTL to the time the
// lease had left, rather than replacing it.
const ExtendAdd = "add"

// Access modes of a read-write lock's acquires (Op.Access); an acquire
// without one is a mutex's or a semaphore's.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// MaxDepth is the deepest re-entry an acquire may declare.
const MaxDepth = 1 << 20

// MaxPermits is the most permits an acquire may declare.
const MaxPermits = 1 << 20

// Bounds on a history's numbers, so that no sum the checkers form (a
// return plus a horizon plus a TTL, and a few of those) overflows int64.
const (
	// MaxTime is the latest call or return: 2^55 ns, over a year.
	MaxTime = int64(1) << 55
	// MaxTTLms is the longest TTL, in ms.
	MaxTTLms = int64(1) << 31
	// MaxClockBound is the widest clock_bound: 2^40 ns, about 18 minutes.
	MaxClockBound = int64(1) << 40
)

// NemesisProcess is the process id of nemesis operations.
const NemesisProcess = -1

// Op is one operation of a history. Timestamps are nanoseconds since the run
// started, all from one monotonic clock.
type Op struct {
	Index   int64  `json:"index"`
	Process int    `json:"process"`
	F       Func   `json:"f"`
	Type    Type   `json:"type"`
	Key     string `json:"key,omitempty"`
	Token   string `json:"token,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	TTLms   int64  `json:"ttl_ms,omitempty"`
	// Mode is set on extends that add their TTL to what remains
	// (ExtendAdd); empty means the TTL was replaced.
	Mode string `json:"mode,omitempty"`
	// Access is set on a read-write lock's acquires: AccessRead or
	// AccessWrite. Permits is set on a semaphore's acquires: the k
	// permits its key has. Both absent: a mutex's.
	Access  string `json:"access,omitempty"`
	Permits int    `json:"permits,omitempty"`
	// WaitMs is set on a blocking acquire's (--wait): how long the lock
	// was let wait for the key, in ms; WakeMs the wake-up bound its lock
	// declares, one value for the whole history; Tried, on one that
	// took the lock, when the lock sent the try that took it, as the
	// lock reports it (the grant was no earlier: it waited until then).
	WaitMs int64 `json:"wait_ms,omitempty"`
	WakeMs int64 `json:"wake_ms,omitempty"`
	Tried  int64 `json:"tried,omitempty"`
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	// Scheduled is set on the acquires of an open-model run (--rate):
	// when the attempt was due, at or before its call. Its latency counts
	// from then (coordinated omission corrected).
	Scheduled int64 `json:"scheduled,omitempty"`
	// CutShort and Late are set on writes only: the client left its
	// critical section before it wanted to (at its lease's deadline less
	// the margin, or stopped by the resource or a pause), and it left after
	// the lease's deadline (woken late).
	CutShort bool   `json:"cut_short,omitempty"`
	Late     bool   `json:"late,omitempty"`
	Error    string `json:"error,omitempty"`
	// ClockBound, if set, says Call and Return are on the history's
	// clock only within ± this many ns (an op recorded on another
	// machine's clock, converted with a measured offset): it took effect
	// within [Call - ClockBound, Return + ClockBound].
	ClockBound int64 `json:"clock_bound,omitempty"`
	// Answered is set on indeterminate acquires, releases and extends
	// whose call returned without saying its outcome (a library that
	// ignores its script's answer, as Symfony's release does): the op
	// took effect by its return if at all, with no info horizon (Latest).
	Answered bool `json:"answered,omitempty"`
	// Depth is set on a reentrant lock's acquires: the holds its owner
	// asked for with it (1 its outer acquire, 2 and up a re-entry, which
	// names the owner's token as its outer acquire does). Absent: not a
	// reentrant lock's.
	Depth int `json:"depth,omitempty"`
	// Value is set on nemesis operations only.
	Value *NemesisValue `json:"value,omitempty"`
}

// Latest is the latest instant the op may have taken effect at, on its
// own clock: its return, plus horizon for an indeterminate op that did
// not return an answer (one that timed out, or was cut off, may still
// land on the server after it gave up).
func (o *Op) Latest(horizon int64) int64 {
	if o.Type == Info && !o.Answered {
		return o.Return + horizon
	}
	return o.Return
}

// Start is when the op's latency counts from: its schedule, if it had one
// (an open-model acquire), else its call.
func (o *Op) Start() int64 {
	if o.Scheduled > 0 {
		return o.Scheduled
	}
	return o.Call
}

// NemesisValue describes one fault transition.
type NemesisValue struct {
	Fault   string   `json:"fault"`
	Phase   string   `json:"phase"` // "start" or "stop"
	Targets []string `json:"targets,omitempty"`
	// Events counts, by name, what the servers were seen to do in the
	// fault's window, read from them (a stop op's): the deposed master's
	// grants after a promotion (granted_by_deposed), the leases a
	// promotion lost (lost_at_promotion).
	Events map[string]int64 `json:"events,omitempty"`
	// Retaken are the grants behind lost_retaken (a stop op's): each key
	// whose lease a promotion (a restart) lost, the token the node held
	// for it before, and when the node was heard setting the key again
	// while that lease would still have held it. The checker counts
	// those the history shows overlapping the lost lease.
	Retaken []Retake `json:"retaken,omitempty"`
	// Healed is when the fault was healed (a stop op's): its nodes back
	// and answering, in ns on the history's clock, where the stop op
	// returned later (it went on watching the nodes: Retaken's wait).
	// Absent (0), the heal is the stop op's return.
	Healed int64 `json:"healed_ns,omitempty"`
}

// Retake is one grant of NemesisValue.Retaken.
type Retake struct {
	Key   string `json:"key"`
	Token string `json:"token"`
	// At is when lockcheck heard the node set the key (its keyspace
	// notification), in ns on the history's clock: the grant was no
	// later.
	At int64 `json:"at_ns"`
}

// TTL returns the op's TTL as a duration.
func (o *Op) TTL() time.Duration { return time.Duration(o.TTLms) * time.Millisecond }

// validate checks the invariants a reader relies on (README.md
// "Reading a run").
func (o *Op) validate() error {
	switch o.F {
	case Acquire, Release, Extend, Write:
		if o.Key == "" {
			return fmt.Errorf("%s op has no key", o.F)
		}
	case Nemesis:
		if o.Value == nil || o.Value.Fault == "" || (o.Value.Phase != "start" && o.Value.Phase != "stop") {
			return errors.New(`nemesis op without a value {"fault": ..., "phase": "start" or "stop"}`)
		}
		if v := o.Value; v.Healed != 0 && (v.Phase != "stop" || v.Healed < o.Call || v.Healed > o.Return) {
			return fmt.Errorf("nemesis %s op healed_ns %d: only a stop op takes it, between its call %d and return %d", v.Phase, v.Healed, o.Call, o.Return)
		}
		for name := range o.Value.Events {
			if !slices.Contains(ServerEvents, name) {
				return fmt.Errorf("nemesis event %q is not one lockcheck reads (%s)", name, strings.Join(ServerEvents, ", "))
			}
		}
	default:
		return fmt.Errorf("unknown f %q (want acquire, release, extend, write or nemesis)", o.F)
	}
	switch o.Type {
	case OK, Fail, Info:
	default:
		return fmt.Errorf("unknown type %q (want ok, fail or info)", o.Type)
	}
	if o.Call < 0 || o.Return < o.Call || o.Return > MaxTime {
		return fmt.Errorf("call %d, return %d: want 0 <= call <= return <= %d (ns since the run started)", o.Call, o.Return, MaxTime)
	}
	if (o.F == Acquire || o.F == Extend) && o.TTLms <= 0 {
		return fmt.Errorf("%s op has no ttl_ms", o.F)
	}
	if o.F != Write && o.F != Nemesis && o.Type != Fail && o.Token == "" {
		return fmt.Errorf("%s %s op has no token (every ok or info acquire, release and extend names its lease)", o.F, o.Type)
	}
	if o.Answered && (o.Type != Info || (o.F != Acquire && o.F != Release && o.F != Extend)) {
		return fmt.Errorf("answered on %s %s op (only indeterminate acquires, releases and extends take it)", o.F, o.Type)
	}
	if (o.CutShort || o.Late) && o.F != Write {
		return fmt.Errorf("cut_short or late on %s op (only write ops take them)", o.F)
	}
	if o.Scheduled != 0 && (o.F != Acquire || o.Scheduled < 0 || o.Scheduled > o.Call) {
		return fmt.Errorf("scheduled %d on %s op called at %d (only acquires take it, due at or before their call)", o.Scheduled, o.F, o.Call)
	}
	if o.ClockBound < 0 || o.ClockBound > MaxClockBound {
		return fmt.Errorf("clock_bound %d: want 0 to %d ns", o.ClockBound, MaxClockBound)
	}
	if o.Mode != "" && (o.F != Extend || o.Mode != ExtendAdd) {
		return fmt.Errorf("mode %q on %s op (only extend ops take a mode, and only %q)", o.Mode, o.F, ExtendAdd)
	}
	if err := o.validateShape(); err != nil {
		return err
	}
	return o.validateWait()
}

// validateShape checks the fields a shape other than the mutex's gives an
// acquire: a reentrant lock's depth, a read-write lock's access, a
// semaphore's permits.
func (o *Op) validateShape() error {
	if o.Depth != 0 && (o.F != Acquire || o.Depth < 1 || o.Depth > MaxDepth || o.Permits > 1 || o.Access != "") {
		return fmt.Errorf("depth %d on %s op (only a reentrant lock's acquires take a depth, 1 to %d, and no permits or access)", o.Depth, o.F, MaxDepth)
	}
	if o.Access != "" && (o.F != Acquire || o.Access != AccessRead && o.Access != AccessWrite) {
		return fmt.Errorf("access %q on %s op (only acquire ops take an access, %q or %q)", o.Access, o.F, AccessRead, AccessWrite)
	}
	if o.Permits != 0 && (o.F != Acquire || o.Permits < 1 || o.Permits > MaxPermits) {
		return fmt.Errorf("permits %d on %s op (only acquire ops take permits, 1 to %d)", o.Permits, o.F, MaxPermits)
	}
	return nil
}

// validateWait checks a blocking acquire's fields: wait_ms and wake_ms
// come together, on acquires only, and tried lies in an ok one's
// interval.
func (o *Op) validateWait() error {
	if (o.WaitMs != 0 || o.WakeMs != 0) && (o.F != Acquire || o.WaitMs < 1 || o.WakeMs < 1 || o.WaitMs > MaxTTLms || o.WakeMs > MaxTTLms) {
		return fmt.Errorf("wait_ms %d, wake_ms %d on %s op (only a blocking acquire takes them, both, 1 to %d)", o.WaitMs, o.WakeMs, o.F, MaxTTLms)
	}
	if o.Tried != 0 && (o.WaitMs == 0 || o.Type != OK || o.Tried < o.Call || o.Tried > o.Return) {
		return fmt.Errorf("tried %d on %s %s op called at %d, returned at %d (only an ok blocking acquire takes it, within its interval)", o.Tried, o.F, o.Type, o.Call, o.Return)
	}
	return nil
}

// Seconds formats a history timestamp as seconds, for messages.
func Seconds(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
