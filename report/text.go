package report

// Every line lockcheck prints to a terminal: a run's summary, verify's and
// bench's tables, and the progress lines of a run, a battery and a sweep.

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// RunText is what a run's summary prints.
type RunText struct {
	// Results are the run's results.json: its verdict, summary, fault
	// windows, latency, thresholds and TTL advice.
	Results
	Dir string
	// Ops and Elapsed are the clients' (Elapsed as a duration).
	Ops        int64
	Elapsed    time.Duration
	AgentsLost []string
	// KeyPrefix, Deleted and Left: an external Redis's keys of the run,
	// and what its clean-up did with them.
	KeyPrefix     string
	Deleted, Left int
	PeakRSS       int64
	Findings      checker.Findings
}

// TextRun prints a run's one-screen summary: its ops, what the clients
// counted, the checkers, the coverage, the thresholds, the verdict and
// where the report is.
func TextRun(w io.Writer, res RunText) {
	s := res.Summary
	secs := res.Elapsed.Seconds()
	fmt.Fprintf(w, "\n%d ops in %v: %.0f ops/s", res.Ops, res.Elapsed.Round(time.Millisecond), float64(res.Ops)/max(secs, 1e-9))
	if ok := s.Ops[history.Acquire][history.OK]; secs > 0 {
		fmt.Fprintf(w, ", %.0f acquisitions/s", float64(ok)/secs)
	}
	if res.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	for _, a := range res.AgentsLost {
		fmt.Fprintf(w, "\n%s", a)
	}
	if res.KeyPrefix != "" {
		fmt.Fprintf(w, "\nexternal redis: every key under %q; %d deleted at the end, %d left", res.KeyPrefix, res.Deleted, res.Left)
	}
	fmt.Fprintf(w, "\n\n  %-8s %10s %10s %10s\n", "op", "ok", "fail", "info")
	for _, f := range []history.Func{history.Acquire, history.Write, history.Extend, history.Release} {
		m := s.Ops[f]
		if m[history.OK]+m[history.Fail]+m[history.Info] == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-8s %10d %10d %10d\n", f, m[history.OK], m[history.Fail], m[history.Info])
	}
	fmt.Fprintf(w, "\n  leases cut short %d, late exits %d, lost %d, acquisitions given up %d\n",
		s.CutShort, s.LateExits, s.Lost, s.GiveUps)
	fmt.Fprintf(w, "  faults: clients paused %d, crashed %d; stale writes rejected %d; ops not sent (node down) %d\n",
		s.Paused, s.Crashed, s.StaleRejected, s.NotSent)
	if s.Undone > 0 {
		fmt.Fprintf(w, "  acquisitions undone (no majority either way) %d\n", s.Undone)
	}
	if s.CutOff > 0 {
		fmt.Fprintf(w, "  commands timed out with their client cut off from redis %d\n", s.CutOff)
	}
	if s.Scheduled > 0 {
		fmt.Fprintf(w, "  open model: %d attempts due, %d started, %d dropped (backlog full), %d never started", s.Scheduled, s.Started, s.Dropped, s.Shortfall)
		if p, ok := res.Latency["start_lag"]; ok {
			fmt.Fprintf(w, "; start lag p50 %.3f / p99 %.3f / max %.3f ms", p.P50, p.P99, p.Max)
		}
		fmt.Fprintln(w)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "  critical sections ended without a release (--skip-release) %d\n", s.Skipped)
	}
	textTTLAdvice(w, res.TTLAdvice)
	textKeysAtResource(w, res.KeysAtResource, readWrite(res.Findings), res.Dir)
	fmt.Fprintf(w, "  peak RSS of lockcheck: %.0f MB\n\n", float64(res.PeakRSS)/(1<<20))
	if len(res.Faults) > 0 {
		fmt.Fprintln(w, "  fault windows:")
		for _, f := range res.Faults {
			fmt.Fprintf(w, "    %s\n", f)
		}
		fmt.Fprintln(w)
	}
	TextChecks(w, res.Findings, res.Dir)
	TextCoverage(w, res.Findings.Coverage)
	TextThresholds(w, res.Thresholds)
	fmt.Fprintf(w, "verdict: %s\nresults: %s\nreport:  %s\n", strings.ToUpper(string(res.Verdict)), res.Dir,
		filepath.Join(res.Dir, "report.html"))
}

// textTTLAdvice prints the TTL against the holds, and the rules of thumb
// the TTL does not fit.
func textTTLAdvice(w io.Writer, a TTLAdvice) {
	if a.Holds == 0 {
		return
	}
	fmt.Fprintf(w, "  ttl %v ms; holds p50 %.0f / p99 %.0f / max %.0f ms, %d of %d over the ttl; sections cut short %.1f%%\n",
		a.TTLms, a.HoldP50ms, a.HoldP99ms, a.HoldMaxms, a.HoldsOverTTL, a.Holds, 100*a.CutShortFraction)
	for _, r := range a.Rules {
		if !r.Fits {
			fmt.Fprintf(w, "    the rule %s gives a ttl of %v ms\n", r.Rule, r.TTLms)
		}
	}
}

// shownKeys caps the keys a run's summary prints at the resource; the
// rest are in results.json.
const shownKeys = 10

// textKeysAtResource prints a line per key of a shape beyond the mutex:
// its peak holders against its permits, or a read-write lock's longest
// writer overlap; keys past their rule first, up to shownKeys.
func textKeysAtResource(w io.Writer, peaks []checker.KeyPeak, rw bool, dir string) {
	if len(peaks) == 0 {
		return
	}
	rows := keyRows(peaks, rw)
	broke := slices.DeleteFunc(slices.Clone(rows), func(r keyRow) bool { return !r.Broke })
	rows = append(broke, slices.DeleteFunc(rows, func(r keyRow) bool { return r.Broke })...)
	if rw {
		fmt.Fprintln(w, "  at the resource (most leases in their sections at once; the longest a writer's overlapped another's):")
	} else {
		fmt.Fprintln(w, "  at the resource (most leases in their sections at once, of k permits):")
	}
	for i, r := range rows {
		if i == shownKeys {
			fmt.Fprintf(w, "    ... %d more keys in %s/results.json\n", len(rows)-shownKeys, dir)
			break
		}
		if rw {
			fmt.Fprintf(w, "    %-16s %4d holders, writer overlap %.3f ms", r.Key, r.Holders, r.OverlapMs)
		} else {
			fmt.Fprintf(w, "    %-16s %4d of %d", r.Key, r.Holders, r.Permits)
		}
		if r.Broke {
			fmt.Fprint(w, "  VIOLATION")
		}
		fmt.Fprintln(w)
	}
}

// TextChecks prints each checker's verdict and its first violations.
func TextChecks(w io.Writer, rep checker.Findings, dir string) {
	for _, c := range rep.Checkers {
		fmt.Fprintf(w, "  %-13s %-8s %s\n", c.Name, c.Verdict, figures(c))
		for i, v := range c.Violations {
			if i == 3 {
				fmt.Fprintf(w, "      ... %d more in %s/results.json\n", c.ViolationCount-3, dir)
				break
			}
			fmt.Fprintf(w, "      %s\n", v.Message)
			if len(v.Minimal) > 0 {
				fmt.Fprintf(w, "        the fewest ops that cannot all be true: %s\n", opList(v.Minimal))
			}
			if v.File != "" {
				fmt.Fprintf(w, "        see %s/%s\n", dir, v.File)
			}
		}
		if len(c.UnknownKeys) > 0 {
			fmt.Fprintf(w, "      unknown keys: %s\n", strings.Join(c.UnknownKeys, ", "))
			for _, u := range c.Undecided[:min(len(c.Undecided), 3)] {
				fmt.Fprintf(w, "        %s\n", u)
			}
			if c.Note != "" {
				fmt.Fprintf(w, "      %s\n", c.Note)
			}
		}
	}
	for _, g := range slices.Sorted(maps.Keys(rep.NotJudged)) {
		fmt.Fprintf(w, "  %-13s %-8s %s\n", g, "n/a", NotJudgedLine(g, rep.NotJudged[g]))
	}
	fmt.Fprintln(w)
}

// NotJudgedLine says which checkers a guarantee left out did not run,
// and why.
func NotJudgedLine(g checker.Guarantee, why string) string {
	return fmt.Sprintf("not judged (%s not run): %s", strings.Join(checker.Of(g), ", "), why)
}

func figures(c checker.Result) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Figures)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.Figures[k]))
	}
	if c.ViolationCount > 0 {
		parts = append(parts, fmt.Sprintf("violations=%d", c.ViolationCount))
	}
	return strings.Join(parts, " ")
}

// TextCoverage prints what the run exercised: the figures a verdict rests
// on.
// A figure the history's shape has not (the checker leaves it out of c)
// is not printed; in a run with no fault window, the faults' own figures
// (each 0) are one line of names.
func TextCoverage(w io.Writer, c checker.Coverage) {
	fmt.Fprintln(w, "  coverage (what the run gave each failure the chance to show):")
	shown, unfaulted := coverageShown(c)
	for _, f := range shown {
		fmt.Fprintf(w, "    %-20s %6d  %s\n", f.Name, c[f.Name], f.Meaning)
	}
	if len(unfaulted) > 0 {
		fmt.Fprintf(w, "    (%s)\n", noWindowLine(unfaulted))
	}
	for _, f := range c.FaultHits() {
		fmt.Fprintf(w, "    %-20s %6s  %s windows that began while a lease was live\n", f.Fault, fmt.Sprintf("%d/%d", f.Hits, f.Windows), f.Fault)
		if f.Hits == 0 {
			fmt.Fprintf(w, "    (%s never began while a lease was live: the verdict owes nothing to it)\n", f.Fault)
		}
	}
	fmt.Fprintln(w)
}

// coverageShown is what the summary and the report page show of c: the
// figures the checker gave (a shape's own only for its shape), each on
// its own line, except, in a run with no fault window, the faults' own
// figures at 0, named together (unfaulted).
func coverageShown(c checker.Coverage) (shown []struct{ Name, Meaning string }, unfaulted []string) {
	faulted := len(c.FaultHits()) > 0
	for _, f := range checker.CoverageFigures {
		n, ok := c[f.Name]
		switch {
		case !ok:
		case !faulted && n == 0 && checker.OfWindows(f.Name):
			unfaulted = append(unfaulted, f.Name)
		default:
			shown = append(shown, f)
		}
	}
	return shown, unfaulted
}

// noWindowLine says the faults' own figures of a run with no fault
// window are 0, naming them.
func noWindowLine(unfaulted []string) string {
	return "no fault window, so the faults' own figures are 0: " + strings.Join(unfaulted, ", ")
}

// TextThresholds prints how each threshold fared, one line each.
func TextThresholds(w io.Writer, rs []ThresholdResult) {
	for _, t := range rs {
		switch {
		case t.Error != "":
			fmt.Fprintf(w, "threshold FAIL  %s: %s\n", t.Threshold, t.Error)
		case !t.Pass:
			fmt.Fprintf(w, "threshold FAIL  %s (actual %g)\n", t.Threshold, t.Actual)
		default:
			fmt.Fprintf(w, "threshold pass  %s (actual %g)\n", t.Threshold, t.Actual)
		}
	}
}

// TextVerify is verify's one-screen summary: a line per scenario, the
// verdict, and what to do.
func TextVerify(w io.Writer, v *Verify, dir string) {
	fmt.Fprintln(w)
	for _, r := range v.Rows {
		TextVerifyRow(w, r)
	}
	fmt.Fprintf(w, "\nverdict: %s%s (%s)\n", strings.ToUpper(string(v.Verdict)), findingsLine(v.Rows), v.Elapsed)
	switch v.Verdict {
	case checker.Invalid:
		fmt.Fprintf(w, "the lock broke in %s: open the scenario's report from verify.html\n", strings.Join(v.Broken, ", "))
	case checker.Unknown:
		for _, line := range shortAdvice(v) {
			fmt.Fprintln(w, line)
		}
	default:
		fmt.Fprintln(w, "every gated guarantee held, each scenario with its coverage met; findings (if any) are in verify.md")
	}
	fmt.Fprintf(w, "results: %s\nreport:  %s\n", filepath.Join(dir, "verify.md"), filepath.Join(dir, "verify.html"))
}

// hopeless is how many runs a figure that stayed at 0 in each of them
// takes to say that more budget will not raise it.
const hopeless = 5

// shortAdvice is what to do about each scenario not exercised: more
// --budget where its figures rose but not far enough (or it ran too few
// times to tell); where a figure stayed at 0 through hopeless runs or
// more, the fault keeps missing what the figure counts, and more budget
// will not help: the workload, or the lock's time constants against the
// scenario's (--ttl, --hold), must change.
func shortAdvice(v *Verify) []string {
	var more, never, undecided []string
	for _, r := range v.Rows {
		if r.Status == StatusUnknown {
			undecided = append(undecided, r.Scenario)
		}
		if r.Status != StatusNotExercised {
			continue
		}
		if r.Meaning != "" {
			never = append(never, r.Scenario+" ("+r.Meaning+")")
			continue
		}
		var zero []string
		for name, want := range r.Requires {
			if want > 0 && r.Coverage[name] == 0 {
				zero = append(zero, name)
			}
		}
		slices.Sort(zero)
		if len(zero) > 0 && r.Runs >= hopeless {
			never = append(never, fmt.Sprintf("%s (%s 0 in %d runs)", r.Scenario, strings.Join(zero, ", "), r.Runs))
		} else {
			more = append(more, r.Scenario)
		}
	}
	var out []string
	if len(more) > 0 {
		out = append(out, "not exercised: "+strings.Join(more, ", ")+": raise --budget, or change the workload so the failure gets its chance")
	}
	if len(never) > 0 {
		out = append(out, "not exercised: "+strings.Join(never, ", ")+": more --budget will not help; the fault never met what the figure counts: change the workload or the lock's time constants (--ttl, --hold) so it does")
	}
	if len(undecided) > 0 || len(out) == 0 {
		out = append(out, "undecided: "+cmp.Or(strings.Join(undecided, ", "), "the check")+": each says why, and what to change, in verify.md")
	}
	return out
}

// findingsLine names the scenarios that broke a guarantee verify does not
// gate ("", none): ", 2 findings: pause broke mutual exclusion,
// partition broke the lease contract and mutual exclusion".
func findingsLine(rows []VerifyRow) string {
	var fs []string
	for _, r := range rows {
		if r.Status != StatusFinding {
			continue
		}
		var broke []string
		if r.Lease == checker.Invalid {
			broke = append(broke, "the lease contract")
		}
		if r.Mutex == checker.Invalid {
			broke = append(broke, "mutual exclusion")
		}
		fs = append(fs, r.Scenario+" broke "+strings.Join(broke, " and "))
	}
	switch len(fs) {
	case 0:
		return ""
	case 1:
		return ", 1 finding: " + fs[0]
	}
	return fmt.Sprintf(", %d findings: %s", len(fs), strings.Join(fs, ", "))
}

// TextVerifyRow prints a scenario's row (report.VerifyRow.Lines), its
// name first.
func TextVerifyRow(w io.Writer, r VerifyRow) {
	for i, line := range r.Lines() {
		name := ""
		if i == 0 {
			name = r.Scenario
		}
		fmt.Fprintf(w, "  %-16s %s\n", name, line)
	}
}

// TextVerifyProgress prints a scenario's first line as it ends.
func TextVerifyProgress(w io.Writer, r VerifyRow) {
	if w != nil {
		fmt.Fprintf(w, "  %-16s %s\n", r.Scenario, r.Lines()[0])
	}
}

// TextMatrixProgress prints a cell's line as it ends.
func TextMatrixProgress(w io.Writer, c MatrixCell) {
	if w != nil {
		fmt.Fprintf(w, "%-10s %-15s %s\n", c.Lock, c.Scenario, c.Line())
	}
}

// TextBench prints a sweep's table, a row a cell.
func TextBench(w io.Writer, cells []BenchRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lock\tclients\tkeys\tagents\tretry\tacq/s\tcs/s\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\twait p99 ms\tattempts/acq\tgive-ups\tsuccess\tJain\tbaseline pairs/s\tratio\tbare loop acq/s\tratio\tprocs\tverdict\t")
	for _, c := range cells {
		ratio, base, bareRatio, bare := "-", "-", "-", "-"
		if c.BaselinePairs > 0 {
			base, ratio = fmt.Sprintf("%.0f", c.BaselinePairs), fmt.Sprintf("%.2fx", c.Ratio)
		}
		if c.BareLoop > 0 {
			bare, bareRatio = fmt.Sprintf("%.0f", c.BareLoop), fmt.Sprintf("%.2fx", c.BareRatio)
			if c.Rounds > 1 {
				bareRatio += fmt.Sprintf(" (median of %d)", c.Rounds)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\t%d\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
			c.Lock, c.Clients, c.Keys, c.Agents, c.Retry, c.Acquisitions, c.CriticalSections, c.AcquireP50, c.AcquireP90, c.AcquireP99,
			c.AcquireP999, c.AcquireMax, c.WaitP99, c.AttemptsPerAcquisition, c.GiveUps, c.SuccessRatio, c.Jain, base, ratio, bare, bareRatio, c.Procs, c.Verdict)
	}
	tw.Flush()
}

// TextBenchRow prints a cell's line, its retry policy too when the
// sweep has several.
func TextBenchRow(w io.Writer, cell BenchRow, retries bool) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "%-12s clients %-6d keys %-8d", cell.Lock, cell.Clients, cell.Keys)
	if cell.Agents > 0 {
		fmt.Fprintf(w, " agents %d", cell.Agents)
	}
	fmt.Fprintf(w, " %10.0f acquisitions/s  p99 %.3f ms  %s", cell.Acquisitions, cell.AcquireP99, cell.Verdict)
	if retries {
		fmt.Fprintf(w, "  retry %s: wait p99 %.1f ms, %d give-ups, fairness %.3f", cell.Retry, cell.WaitP99, cell.GiveUps, cell.Jain)
	}
	fmt.Fprintln(w)
}

// Progress is a run's live progress line: on a terminal one line redrawn
// in place each tick; elsewhere (a CI log) a plain line every PlainEvery,
// with no carriage return or escape sequence.
type Progress struct {
	w    io.Writer
	tty  bool
	last time.Time
	drew bool
}

// PlainEvery is how often a progress line goes to a writer that is not a
// terminal.
const PlainEvery = 5 * time.Second

// NewProgress is the progress line for w.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Update shows the run at secs into it: ops/s over the last tick, and the
// ops by type so far.
func (p *Progress) Update(secs float64, perSec, ok, fail, info int64) {
	line := fmt.Sprintf("%6.1fs  %8d ops/s  ok %d  fail %d  info %d", secs, perSec, ok, fail, info)
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+line)
		p.drew = true
		return
	}
	if now := time.Now(); now.Sub(p.last) >= PlainEvery {
		p.last = now
		fmt.Fprintln(p.w, strings.TrimSpace(line))
	}
}

// End clears the line on a terminal.
func (p *Progress) End() {
	if p.tty && p.drew {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// opList is indexes as the history names its ops (#12, #40).
func opList(idx []int64) string {
	parts := make([]string, len(idx))
	for i, x := range idx {
		parts[i] = "#" + strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, ", ")
}
