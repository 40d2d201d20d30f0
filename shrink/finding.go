package shrink

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// Finding is what a run broke, as a shrink keeps it: the checker, the
// guarantee it judges, and the kind of violation (its message with the
// run's particulars, keys, clients, times and tokens, taken out). A
// candidate is kept only if it breaks with the same finding, not with
// any failure: a smaller run that breaks another way reproduces another
// bug.
type Finding struct {
	Checker   string `json:"checker"`
	Guarantee string `json:"guarantee,omitempty"`
	Kind      string `json:"kind"`
}

// String is the finding as the summary names it.
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s", f.Checker, f.Kind)
}

// Break is one violation of a finding: when it happened, in history
// time (ns since the run began).
type Break struct {
	Finding
	End int64
}

// FindingsOf is every violation of the checkers that found fs invalid,
// in the checkers' order.
func FindingsOf(fs checker.Findings) []Break {
	guarantee := map[string]string{}
	for _, s := range checker.All() {
		guarantee[s.Name()] = string(s.Guarantee)
	}
	var out []Break
	for _, r := range fs.Checkers {
		if r.Verdict != checker.Invalid {
			continue
		}
		for _, v := range r.Violations {
			out = append(out, Break{Finding{Checker: r.Name, Guarantee: guarantee[r.Name], Kind: KindOf(v.Key, v.Message)}, v.Window[1]})
		}
	}
	return out
}

// KindOf is the kind of a violation's message on key: its closing
// clause ("two holders at once", "a definite failure with no holder")
// where the message is the key's, or what comes before " on KEY"
// ("double holder", "stuck lock"), with every word that carries a
// number (a client, a time, a token) read as "#".
func KindOf(key, msg string) string {
	m := msg
	if rest, ok := strings.CutPrefix(msg, key+": "); ok && key != "" {
		m = rest
		if i := strings.LastIndex(m, ": "); i >= 0 {
			m = m[i+2:]
		}
	} else if before, _, ok := strings.Cut(msg, " on "); ok {
		m = before
	} else if before, _, ok := strings.Cut(msg, ": "); ok {
		m = before
	}
	words := strings.Fields(m)
	for i, w := range words {
		if strings.ContainsAny(w, "0123456789") {
			words[i] = "#"
		}
	}
	return strings.Join(slices.Compact(words), " ")
}

// Earliest is the earliest break of f among bs (the point a run must
// reach), and whether there is one.
func Earliest(bs []Break, f Finding) (Break, bool) {
	var first Break
	found := false
	for _, b := range bs {
		if b.Finding == f && (!found || b.End < first.End) {
			first, found = b, true
		}
	}
	return first, found
}
