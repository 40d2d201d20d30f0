package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// TestProgress_PlainOffTerminal: a progress line to a writer that is not a
// terminal (a CI log) is plain lines, at most one per PlainEvery, with no
// carriage return or escape sequence.
func TestProgress_PlainOffTerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	for i := range 10 {
		p.Update(float64(i), 100, int64(i), 0, 0)
	}
	p.End()
	out := b.String()
	if strings.ContainsAny(out, "\r\033") {
		t.Errorf("progress off a terminal has \\r or an escape: %q", out)
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("10 updates within %v gave %d lines, want 1: %q", PlainEvery, n, out)
	}
}

// TestTextVerify_NamesFindings: verify's verdict line names each finding
// (a break of a guarantee not gated), not only VALID.
func TestTextVerify_NamesFindings(t *testing.T) {
	v := &Verify{Verdict: checker.Valid, Elapsed: "1m0s", Rows: []VerifyRow{
		{Scenario: "contention", Status: StatusPassed, Lease: checker.Valid, Mutex: checker.Valid},
		{Scenario: "partition", Status: StatusFinding, Lease: checker.Valid, Mutex: checker.Invalid},
	}}
	var b bytes.Buffer
	TextVerify(&b, v, "d")
	if want := "verdict: VALID, 1 finding: partition broke mutual exclusion (1m0s)"; !strings.Contains(b.String(), want) {
		t.Errorf("got\n%s\nwant a line %q", b.String(), want)
	}
	v.Rows = v.Rows[:1]
	b.Reset()
	TextVerify(&b, v, "d")
	if !strings.Contains(b.String(), "verdict: VALID (1m0s)") {
		t.Errorf("no finding: got\n%s\nwant verdict: VALID (1m0s)", b.String())
	}
}

// TestTextCoverage_FiguresOfTheRun: a run with no fault window prints
// the faults' own figures as one line of names, and none of a shape's
// figures the checker left out; a run with a window prints each fault
// figure on its own line, 0 or not.
func TestTextCoverage_FiguresOfTheRun(t *testing.T) {
	quiet := checker.Coverage{checker.Contended: 5, history.LostAtRestart: 0, history.LostReply: 0}
	var b strings.Builder
	TextCoverage(&b, quiet)
	out := b.String()
	if !strings.Contains(out, "contended") || !strings.Contains(out, "(no fault window, so the faults' own figures are 0: lost_at_restart, lost_reply)") ||
		strings.Contains(out, "    lost_at_restart") || strings.Contains(out, checker.AllPermitsTried) {
		t.Errorf("no fault window:\n%s\nwant contended, the faults' figures on one line, no all_permits_tried", out)
	}
	faulted := checker.Coverage{checker.Contended: 5, history.LostAtRestart: 0, checker.Windows("kill-redis"): 3, checker.Hit("kill-redis"): 2}
	b.Reset()
	TextCoverage(&b, faulted)
	if out := b.String(); !strings.Contains(out, "    lost_at_restart") || strings.Contains(out, "no fault window") {
		t.Errorf("a kill-redis window:\n%s\nwant lost_at_restart on its own line", out)
	}
}
