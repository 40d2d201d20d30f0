package nemesis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// Window is one fault window of a schedule: which fault, when it starts
// (from the schedule's start) and how long it stays on. ID is the
// window's index in the schedule its seed derives, and seeds the
// window's own choices (its targets): a schedule that drops or changes
// a window (lockcheck shrink) leaves every other one as it was.
type Window struct {
	ID     int
	Fault  string
	Start  time.Duration
	Length time.Duration
}

// windowJSON is a Window as a plan file writes it: durations as Go
// writes them ("4s").
type windowJSON struct {
	ID     int    `json:"id"`
	Fault  string `json:"fault"`
	Start  string `json:"start"`
	Length string `json:"length"`
}

// MarshalJSON writes w with its durations as text.
func (w Window) MarshalJSON() ([]byte, error) {
	return json.Marshal(windowJSON{w.ID, w.Fault, w.Start.String(), w.Length.String()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Window) UnmarshalJSON(b []byte) error {
	var j windowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	start, err := time.ParseDuration(j.Start)
	if err != nil {
		return fmt.Errorf("window %d: start %q: %v", j.ID, j.Start, err)
	}
	length, err := time.ParseDuration(j.Length)
	if err != nil {
		return fmt.Errorf("window %d: length %q: %v", j.ID, j.Length, err)
	}
	*w = Window{ID: j.ID, Fault: j.Fault, Start: start, Length: length}
	return nil
}

// Streams of a window's randomness, apart from the clients' (0..N-1)
// and from each other: which fault (choice) and the targets it picks.
const (
	choiceStream = 0x6e656d << 32
	targetStream = 0x746172 << 32
)

// derived is window i of the schedule cfg's seed derives: every Interval
// one of Faults, chosen by the window's own seed, on for Duration. Its
// Start is nominal: Run starts a derived window Interval after the
// previous heal, and a fault that decides its own hold (Lasting) or a
// slow start or heal moves the rest; a plan made of them (Schedule)
// runs each at its Start.
func derived(cfg Config, i int) Window {
	f := 0
	if len(cfg.Faults) > 1 {
		f = rand.New(rand.NewPCG(uint64(cfg.Seed), choiceStream+uint64(i))).IntN(len(cfg.Faults))
	}
	return Window{ID: i, Fault: cfg.Faults[f], Start: cfg.Interval + time.Duration(i)*(cfg.Interval+cfg.Duration), Length: cfg.Duration}
}

// targetRNG is the random source window id's fault picks its targets
// with: the seed's and the window's, no other window's.
func targetRNG(seed int64, id int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), targetStream+uint64(id)))
}

// Schedule is the windows cfg (through WithDefaults) runs that start
// before until: its Windows if it has them, else those its seed derives.
func Schedule(cfg Config, until time.Duration) []Window {
	if cfg.Windows != nil {
		var ws []Window
		for _, w := range cfg.Windows {
			if w.Start < until {
				ws = append(ws, w)
			}
		}
		return ws
	}
	var ws []Window
	for i := 0; len(cfg.Faults) > 0; i++ {
		w := derived(cfg, i)
		if w.Start >= until {
			break
		}
		ws = append(ws, w)
	}
	return ws
}

// window is the i-th window Run plays, and whether there is one.
func (c Config) window(i int) (Window, bool) {
	if c.Windows != nil {
		if i >= len(c.Windows) {
			return Window{}, false
		}
		return c.Windows[i], true
	}
	return derived(c, i), true
}

// TargetDraws is the first n draws of window id's target source (a test
// sees that dropping a window leaves the others' choices as they were).
func TargetDraws(seed int64, id, n int) []uint64 {
	rng := targetRNG(seed, id)
	out := make([]uint64, n)
	for i := range out {
		out[i] = rng.Uint64()
	}
	return out
}
