package report

import (
	"bytes"
	"strings"
	"testing"
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
