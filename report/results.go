package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Results is results.json: the verdict, every checker's result and the
// run's figures.
type Results struct {
	Verdict     checker.Verdict       `json:"verdict"`
	Lock        string                `json:"lock"`
	Ops         int64                 `json:"ops"`
	Elapsed     string                `json:"elapsed"`
	OpsPerSec   float64               `json:"ops_per_sec"`
	Interrupted bool                  `json:"interrupted,omitempty"`
	Summary     Summary               `json:"summary"`
	Faults      []checker.FaultWindow `json:"faults,omitempty"`
	// Coverage is what the run exercised (checker.CoverageFigures).
	Coverage checker.Coverage `json:"coverage"`
	Checkers []checker.Result `json:"checkers"`
	// KeysAtResource are, for a shape beyond the mutex, each key's peak
	// holders against its permits (and a read-write lock's longest
	// writer overlap), as the resource saw them (checker.KeyPeaks).
	KeysAtResource []checker.KeyPeak `json:"keys_at_resource,omitempty"`
	// NotJudged are the guarantees the check left out, with why
	// (checker.Findings.NotJudged): their checkers did not run.
	NotJudged map[checker.Guarantee]string `json:"not_judged,omitempty"`
	// CutOff says the history's last line was cut off, and the findings
	// rest on the whole ops before it (checker.Findings.CutOff).
	CutOff string `json:"cut_off,omitempty"`
	// Latency is each op series' percentiles (ms), Throughput the rates
	// over the history; Thresholds the --threshold results.
	Latency    map[string]Percentiles `json:"latency"`
	Throughput Throughput             `json:"throughput"`
	Thresholds []ThresholdResult      `json:"thresholds,omitempty"`
	// TTLAdvice is the TTL against the hold times, and what each rule of
	// thumb gives.
	TTLAdvice TTLAdvice `json:"ttl_advice"`
}

// Summary is what the clients did: op counts, cut-short and late
// sections and stale writes read off the history, and the figures the
// history does not record (history.Unrecorded).
type Summary struct {
	// Ops counts the clients' ops by f, then type.
	Ops history.Counts `json:"ops"`
	// CutShort counts critical sections a client left before it wanted to
	// (write ops marked cut_short).
	CutShort int64 `json:"cut_short"`
	// LateExits counts clients that left their critical section after the
	// lease's deadline (write ops marked late).
	LateExits int64 `json:"late_exits"`
	// Unrecorded is what the clients counted that the history does not
	// record (leases lost, give-ups, ops not sent, ...).
	history.Unrecorded
	// Shortfall is an open-model run's attempts due and never started.
	Shortfall int64 `json:"shortfall,omitempty"`
	// StaleRejected counts writes the fenced resource rejected (failed
	// writes).
	StaleRejected int64 `json:"stale_rejected"`
}

// Summarize reads a run's Summary off its history, with what the clients
// counted besides.
func Summarize(ops []history.Op, u history.Unrecorded) Summary {
	return SummaryOf(Compute(ops), u)
}

// SummaryOf is Summarize with the history's Stats already computed.
func SummaryOf(st *Stats, u history.Unrecorded) Summary {
	c := history.Counts{}
	for f, m := range st.Counts {
		if f != history.Nemesis {
			c[f] = m
		}
	}
	return Summary{Ops: c, Unrecorded: u, Shortfall: u.Scheduled - u.Started, StaleRejected: c.Get(history.Write, history.Fail),
		CutShort: st.CutShort, LateExits: st.LateExits}
}

// WriteResults writes r as results.json into dir.
func WriteResults(dir string, r Results) error {
	return writeJSON(filepath.Join(dir, "results.json"), r)
}

// ReadResults reads dir's results.json.
func ReadResults(dir string) (Results, error) {
	var r Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return r, err
}

// writeJSON writes v, indented, with a final newline; < > & stay as
// they are (a threshold reads "acquire.p99<5ms").
func writeJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
