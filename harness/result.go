package harness

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// Result is what a run produced: results.json's report.Results (its
// verdict, summary, fault windows, latency, throughput, thresholds, TTL
// advice), the findings behind them, and what only the caller needs.
type Result struct {
	report.Results
	Dir      string
	Findings checker.Findings
	// Started is when the clients started, on the history's clock (the
	// lock's build and its processes' start-up come before it); Elapsed
	// is how long they ran from then (results.json's, as a duration), Ops
	// how many ops they recorded.
	Started  time.Duration
	Elapsed  time.Duration
	Ops      int64
	Redis    string
	Workload workload.Config
	// Cleaned is what the run deleted from an external Redis at its end.
	Cleaned cluster.Cleaned
	// Procs is the GOMAXPROCS the clients ran at (after TuneProcs).
	Procs int
	// OwnTimeout is the lock's own command timeout, if it declared one
	// (lockimpl.OwnTimeouter).
	OwnTimeout time.Duration
	// Agents is run.json's account of the agents (Config.Agents), and
	// AgentsLost says which were lost, and when.
	Agents     []report.RunAgent
	AgentsLost []string
}

// ThresholdsFailed returns the thresholds the run did not meet.
func (r *Result) ThresholdsFailed() []report.ThresholdResult {
	return report.Failed(r.Thresholds)
}

// Text is what the run's summary prints (report.TextRun).
func (r *Result) Text() report.RunText {
	return report.RunText{Results: r.Results, Dir: r.Dir, Ops: r.Ops, Elapsed: r.Elapsed, AgentsLost: r.AgentsLost,
		KeyPrefix: r.Cleaned.Prefix, Deleted: r.Cleaned.Deleted, Left: r.Cleaned.Left, PeakRSS: PeakRSS(), Findings: r.Findings}
}
