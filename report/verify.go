package report

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// Verify is verify.json: one lock through lockcheck verify's battery.
type Verify struct {
	Lock    string          `json:"lock"`
	Verdict checker.Verdict `json:"verdict"`
	// Broken names the gated scenarios whose guarantee broke; Short the
	// scenarios not exercised.
	Broken  []string    `json:"broken,omitempty"`
	Short   []string    `json:"not_exercised,omitempty"`
	Elapsed string      `json:"elapsed"`
	Budget  string      `json:"budget"`
	Seed    int64       `json:"seed"`
	Require []string    `json:"require,omitempty"`
	Args    []string    `json:"args,omitempty"`
	Rows    []VerifyRow `json:"scenarios"`
}

// Scenario statuses.
const (
	StatusPassed       = "passed"        // both guarantees held, coverage met
	StatusBroken       = "broken"        // a gated guarantee broke: verify fails
	StatusFinding      = "finding"       // a guarantee broke where it is not gated
	StatusNotExercised = "not exercised" // coverage short after the budget
	StatusUnknown      = "unknown"       // a check did not finish
	StatusNA           = "n/a"           // the scenario does not apply
	StatusNotRun       = "not run"       // stopped before it (a failure, or interrupted)
)

// VerifyRow is one scenario of the battery.
type VerifyRow struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	// Server marks a server-fault scenario (the deployment table).
	Server bool   `json:"server,omitempty"`
	Status string `json:"status"`
	// Lease is the lease contract (linearizable, liveness); Mutex mutual
	// exclusion at the resource (mutex, fencing).
	Lease checker.Verdict `json:"lease,omitempty"`
	Mutex checker.Verdict `json:"mutex,omitempty"`
	// NotJudged are the guarantees the scenario's runs left out, with
	// why (a lock whose leases are scopes: the lease contract); their
	// verdict is empty.
	NotJudged map[checker.Guarantee]string `json:"not_judged,omitempty"`
	// Checkers is each registered checker's verdict over the scenario's
	// runs.
	Checkers map[string]checker.Verdict `json:"checkers,omitempty"`
	// LeaseGated and MutexGated say whether a break of each fails verify.
	LeaseGated bool `json:"lease_gated"`
	MutexGated bool `json:"mutex_gated"`
	// Meaning is what a break means, with its first evidence.
	Meaning  string           `json:"meaning,omitempty"`
	Runs     int              `json:"runs"`
	Seeds    []int64          `json:"seeds,omitempty"`
	Dir      string           `json:"dir,omitempty"` // the last run, relative to verify's dir
	Coverage checker.Coverage `json:"coverage,omitempty"`
	Requires checker.Coverage `json:"requires,omitempty"`
	// Short says which figures fell short of Requires.
	Short   []string `json:"short,omitempty"`
	NA      string   `json:"na,omitempty"`
	Elapsed string   `json:"elapsed,omitempty"`
	// ThresholdsFailed are the --thresholds a run of the scenario failed.
	ThresholdsFailed []string `json:"thresholds_failed,omitempty"`
	// GrantedWhileDown counts acquires the lock granted while the only
	// Redis node was down (checker.GrantedWhileDown): it fails open, which
	// no deployment excuses, so it fails verify whatever the gates.
	GrantedWhileDown int `json:"granted_while_down,omitempty"`
	// Scale is how far the scenario was stretched to fit the lock
	// (scenario.Scaled): its keys lived Scale times the TTL it asked for
	// (0 or 1: as written).
	Scale int `json:"scale,omitempty"`
	// Acquires and InfoAcquires count the recorded acquires of the
	// scenario's runs, and those of them that ended indeterminate: a
	// scenario not exercised because nearly every acquire ended so says
	// why (its Meaning), and more budget will not help.
	Acquires     int64 `json:"acquires,omitempty"`
	InfoAcquires int64 `json:"info_acquires,omitempty"`
	// EmptyRuns counts the scenario's runs that recorded no op at all:
	// nothing to judge, so each is a lost attempt, and a scenario whose
	// every run was empty is unknown.
	EmptyRuns int `json:"empty_runs,omitempty"`
}

// ShortOf lists the figures of c below their target in req.
func ShortOf(c, req checker.Coverage) []string {
	var out []string
	for name, n := range req {
		if c.Count(name) < n {
			out = append(out, fmt.Sprintf("%s %d < %d", name, c.Count(name), n))
		}
	}
	sort.Strings(out)
	return out
}

// CoverageText is "late_release_free=12/5 stale_holder=3/2": each
// required figure against its target.
func (r VerifyRow) CoverageText() string {
	if r.NA != "" {
		return ""
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(r.Requires)) {
		parts = append(parts, fmt.Sprintf("%s=%d/%d", n, r.Coverage.Count(n), r.Requires[n]))
	}
	return strings.Join(parts, " ")
}

var verifyPage = template.Must(template.ParseFS(assets, "assets/verify.html.tmpl"))

// WriteVerify writes verify.json, verify.md, verify.html and junit.xml
// into dir.
func WriteVerify(dir string, v Verify) error {
	if err := writeJSON(filepath.Join(dir, "verify.json"), v); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# lockcheck verify: %s: %s\n\n", v.Lock, strings.ToUpper(string(v.Verdict)))
	md.WriteString("| scenario | lease contract | mutual exclusion | status | coverage (got/needed) | runs |\n|---|---|---|---|---|---|\n")
	for _, r := range v.Rows {
		fmt.Fprintf(&md, "| `%s` | %s | %s | %s | %s | %d |\n", r.Scenario, r.cell(checker.LeaseContract), r.cell(checker.MutualExclusion),
			r.statusText(), r.CoverageText(), r.Runs)
	}
	md.WriteString("\n")
	for _, r := range v.Rows {
		fmt.Fprintf(&md, "- `%s`: %s", r.Scenario, r.Description)
		if r.Meaning != "" {
			fmt.Fprintf(&md, ". **%s**", r.Meaning)
		}
		if r.Dir != "" {
			fmt.Fprintf(&md, " ([report](%s/report.html))", r.Dir)
		}
		md.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "verify.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := verifyPage.Execute(&b, v); err != nil {
		return fmt.Errorf("verify page: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "verify.html"), b.Bytes(), 0o644); err != nil {
		return err
	}
	return writeVerifyJUnit(filepath.Join(dir, "junit.xml"), v)
}

// cellText is a guarantee's verdict, marked when it does not gate.
// cell is the verdict text of guarantee g: "n/a" where it was not
// judged.
func (r VerifyRow) cell(g checker.Guarantee) string {
	if _, left := r.NotJudged[g]; left {
		return "n/a"
	}
	if g == checker.LeaseContract {
		return cellText(r.Lease, r.LeaseGated)
	}
	return cellText(r.Mutex, r.MutexGated)
}

func cellText(v checker.Verdict, gated bool) string {
	switch {
	case v == "":
		return "-"
	case v == checker.Invalid && !gated:
		return "invalid (finding)"
	}
	return string(v)
}

// Lines are the row as a terminal shows it: a line of verdicts, status
// and coverage, then the meaning of a break and each figure short.
func (r VerifyRow) Lines() []string {
	if r.NA != "" || r.Status == StatusNotRun {
		return []string{r.statusText()}
	}
	lines := []string{fmt.Sprintf("lease %-17s mutex %-17s %-14s runs %-3d %s", r.cell(checker.LeaseContract), r.cell(checker.MutualExclusion),
		r.Status, r.Runs, r.CoverageText())}
	if r.Meaning != "" {
		lines = append(lines, r.Meaning)
	}
	for _, s := range r.Short {
		lines = append(lines, "short: "+s)
	}
	for _, t := range r.ThresholdsFailed {
		lines = append(lines, "threshold failed: "+t)
	}
	return lines
}

func (r VerifyRow) statusText() string {
	switch {
	case r.NA != "":
		return "n/a: " + r.NA
	case len(r.Short) > 0 && r.Status == StatusNotExercised:
		return "not exercised: " + strings.Join(r.Short, ", ")
	}
	return r.Status
}

// writeVerifyJUnit writes one test case per scenario and guarantee: a
// gated break is a failure, a scenario not exercised or unknown an error,
// a finding passes with its meaning in system-out, n/a is skipped.
func writeVerifyJUnit(path string, v Verify) error {
	suite := junitSuite{Name: "lockcheck.verify." + v.Lock, Time: "0"}
	if d, err := time.ParseDuration(v.Elapsed); err == nil {
		suite.Time = fmt.Sprintf("%.3f", d.Seconds())
	}
	for _, r := range v.Rows {
		for _, g := range []struct {
			name    string
			verdict checker.Verdict
			gated   bool
		}{{"lease", r.Lease, r.LeaseGated}, {"mutex", r.Mutex, r.MutexGated}} {
			tc := junitCase{Class: "lockcheck.verify." + v.Lock, Name: r.Scenario + "/" + g.name, Time: "0"}
			if d, err := time.ParseDuration(r.Elapsed); err == nil {
				tc.Time = fmt.Sprintf("%.3f", d.Seconds()/2) // the scenario's runs, shared by its two cases
			}
			switch {
			case r.NA != "" || r.Status == StatusNotRun:
				tc.Skipped = &junitProblem{Message: r.statusText()}
			case g.verdict == checker.Invalid && g.gated:
				suite.Failures++
				tc.Failure = &junitProblem{Message: r.Meaning, Type: "invalid", Text: r.Dir}
			case r.Status == StatusNotExercised || g.verdict == checker.Unknown:
				suite.Errors++
				tc.Error = &junitProblem{Message: r.statusText(), Type: "unknown", Text: r.Dir}
			case g.verdict == checker.Invalid:
				tc.Out = "finding: " + r.Meaning
			}
			suite.Cases = append(suite.Cases, tc)
		}
	}
	return writeSuite(path, suite)
}
