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
	Lost     int64 `json:"lost"`
	// LateExits counts clients that left their critical section after the
	// lease's deadline (write ops marked late).
	LateExits int64 `json:"late_exits"`
	GiveUps   int64 `json:"give_ups"`
	NotSent   int64 `json:"not_sent"`
	Undone    int64 `json:"undone,omitempty"`
	Crashed   int64 `json:"crashed"`
	Paused    int64 `json:"paused"`
	CutOff    int64 `json:"cut_off,omitempty"`
	// SkippedReleases counts sections that ended without a release
	// (--skip-release): their leases ran out their TTL.
	SkippedReleases int64 `json:"skipped_releases,omitempty"`
	// Scheduled, Started and Dropped are an open-model run's attempts
	// (--rate): due, started, dropped with the backlog full; Shortfall is
	// the due ones never started.
	Scheduled int64 `json:"scheduled,omitempty"`
	Started   int64 `json:"started,omitempty"`
	Dropped   int64 `json:"dropped,omitempty"`
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
	return Summary{Ops: c, Lost: u.Lost, GiveUps: u.GiveUps, NotSent: u.NotSent, Undone: u.Undone,
		Crashed: u.Crashed, Paused: u.Paused, CutOff: u.CutOff, SkippedReleases: u.Skipped,
		Scheduled: u.Scheduled, Started: u.Started, Dropped: u.Dropped, Shortfall: u.Scheduled - u.Started, StaleRejected: c.Get(history.Write, history.Fail),
		CutShort: st.CutShort, LateExits: st.LateExits}
}

// Unrecorded returns the figures of s that the history does not record.
func (s Summary) Unrecorded() history.Unrecorded {
	return history.Unrecorded{Lost: s.Lost, GiveUps: s.GiveUps, NotSent: s.NotSent, Undone: s.Undone, Crashed: s.Crashed, Paused: s.Paused, CutOff: s.CutOff, Skipped: s.SkippedReleases,
		Scheduled: s.Scheduled, Started: s.Started, Dropped: s.Dropped}
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
