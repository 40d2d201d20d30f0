package harness

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// Result is what a run produced.
type Result struct {
	Dir      string
	Verdict  checker.Verdict
	Findings checker.Findings
	Summary  report.Summary
	Elapsed  time.Duration
	Ops      int64
	Redis    string
	Workload workload.Config
	// Interrupted is set when ctx ended the run early.
	Interrupted bool
	// Faults are the fault windows the nemesis recorded.
	Faults []checker.FaultWindow
	// Cleaned is what the run deleted from an external Redis at its end.
	Cleaned cluster.Cleaned
	// Latency and Throughput are results.json's; Thresholds how each
	// --threshold fared.
	Latency    map[string]report.Percentiles
	Throughput report.Throughput
	Thresholds []report.ThresholdResult
	// TTLAdvice is results.json's ttl_advice.
	TTLAdvice report.TTLAdvice
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
	return report.RunText{Dir: r.Dir, Ops: r.Ops, Elapsed: r.Elapsed, Interrupted: r.Interrupted, AgentsLost: r.AgentsLost,
		KeyPrefix: r.Cleaned.Prefix, Deleted: r.Cleaned.Deleted, Left: r.Cleaned.Left, Summary: r.Summary, Latency: r.Latency,
		TTLAdvice: r.TTLAdvice, PeakRSS: PeakRSS(), Faults: r.Faults, Findings: r.Findings, Thresholds: r.Thresholds, Verdict: r.Verdict}
}
