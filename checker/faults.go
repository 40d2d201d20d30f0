package checker

import (
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// FaultWindow is one fault as the history recorded it.
type FaultWindow struct {
	Fault   string   `json:"fault"`
	Targets []string `json:"targets,omitempty"`
	Start   int64    `json:"start_ns"`
	Stop    int64    `json:"stop_ns"` // -1: never healed
	// Healed is when the fault was healed, before Stop where the stop op
	// went on watching the nodes (history.NemesisValue.Healed); 0: at
	// Stop (HealedAt).
	Healed int64  `json:"healed_ns,omitempty"`
	Error  string `json:"error,omitempty"`
	// Events is what the servers were seen to do in the window, read from
	// them (its stop op's history.NemesisValue.Events).
	Events map[string]int64 `json:"events,omitempty"`
	// Retaken are the grants behind Events' lost_retaken
	// (history.NemesisValue.Retaken), which the coverage judges against
	// the history (retakenSeen).
	Retaken []history.Retake `json:"retaken,omitempty"`
}

// HealedAt is when the fault was healed: Healed, or Stop.
func (w FaultWindow) HealedAt() int64 {
	if w.Healed != 0 {
		return w.Healed
	}
	return w.Stop
}

// String is "failover n1 3.002s..9.106s".
func (w FaultWindow) String() string {
	stop := "(never healed)"
	if w.Stop >= 0 {
		stop = history.Seconds(w.Stop)
	}
	s := fmt.Sprintf("%s %s %s..%s", w.Fault, strings.Join(w.Targets, ","), history.Seconds(w.Start), stop)
	if w.Error != "" {
		s += " (" + w.Error + ")"
	}
	return s
}

// FaultWindows pairs the nemesis start and stop ops of a history.
func FaultWindows(ops []history.Op) []FaultWindow {
	var ws []FaultWindow
	open := map[string]int{}
	for i := range ops {
		op := &ops[i]
		if op.F != history.Nemesis || op.Value == nil {
			continue
		}
		id := op.Value.Fault + "/" + strings.Join(op.Value.Targets, ",")
		switch op.Value.Phase {
		case "start":
			open[id] = len(ws)
			ws = append(ws, FaultWindow{Fault: op.Value.Fault, Targets: op.Value.Targets, Start: op.Call, Stop: -1, Error: op.Error})
		case "stop":
			if k, ok := open[id]; ok {
				ws[k].Stop, ws[k].Events, ws[k].Retaken = op.Return, op.Value.Events, op.Value.Retaken
				ws[k].Healed = op.Value.Healed
				if ws[k].Error == "" {
					ws[k].Error = op.Error
				}
				delete(open, id)
			}
		}
	}
	return ws
}
