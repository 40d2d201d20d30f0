package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// MatrixCell is one lock under one scenario of a lockcheck matrix:
// matrix.md and matrix.html are written from them.
type MatrixCell struct {
	Lock, Scenario string
	Topology       string
	Verdict        checker.Verdict
	// NA says why the cell does not apply.
	NA            string
	DoubleHolders int
	Violations    int
	Ops           int64
	Runs          int
	Dir           string // relative to the matrix dir
	Expected      checker.Verdict
	Err           string
}

// Matches reports whether the cell met its expectation (true if none).
func (c MatrixCell) Matches() bool {
	return c.Expected == "" || c.NA != "" || c.Verdict == c.Expected
}

// Line is the cell in one line, for the progress output.
func (c MatrixCell) Line() string {
	if c.NA != "" {
		return "n/a: " + c.NA
	}
	s := string(c.Verdict)
	if c.Violations > 0 {
		s += fmt.Sprintf(" (%d violations, %d double holders)", c.Violations, c.DoubleHolders)
	}
	if c.Runs > 1 {
		s += fmt.Sprintf(", run %d", c.Runs)
	}
	if !c.Matches() {
		s += ", EXPECTED " + string(c.Expected)
	}
	if c.Err != "" {
		s += "; error: " + strings.SplitN(c.Err, "\n", 2)[0]
	}
	return s
}

func (c MatrixCell) markdown() string {
	if c.NA != "" {
		return "n/a"
	}
	s := string(c.Verdict)
	if c.Verdict == checker.Invalid {
		s = "**invalid**"
	}
	if c.DoubleHolders > 0 {
		s += fmt.Sprintf(" (%s)", plural(c.DoubleHolders, "double holder"))
	} else if c.Violations > 0 {
		s += fmt.Sprintf(" (%s)", plural(c.Violations, "violation"))
	}
	if !c.Matches() {
		s += " ≠ expected " + string(c.Expected)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// MatrixColumn is a scenario of the matrix.
type MatrixColumn struct{ Name, Description string }

// matrixView is the matrix as its template sees it: one row per lock.
type matrixView struct {
	Scenarios []MatrixColumn
	Rows      [][]MatrixCell
}

var matrixPage = template.Must(template.ParseFS(assets, "assets/matrix.html.tmpl"))

// WriteMatrix writes matrix.md and matrix.html into dir: one row per lock,
// one column per scenario.
func WriteMatrix(dir string, locks []string, cols []MatrixColumn, cells []MatrixCell) error {
	v := matrixView{Scenarios: cols}
	for _, l := range locks {
		var row []MatrixCell
		for _, s := range cols {
			row = append(row, cellOf(cells, l, s.Name))
		}
		v.Rows = append(v.Rows, row)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "| lock |")
	for _, s := range cols {
		fmt.Fprintf(&md, " `%s` |", s.Name)
	}
	md.WriteString("\n|---|")
	for range cols {
		md.WriteString("---|")
	}
	md.WriteString("\n")
	for i, l := range locks {
		fmt.Fprintf(&md, "| `%s` |", l)
		for _, c := range v.Rows[i] {
			fmt.Fprintf(&md, " %s |", c.markdown())
		}
		md.WriteString("\n")
	}
	md.WriteString("\n")
	for _, s := range cols {
		fmt.Fprintf(&md, "- `%s`: %s\n", s.Name, s.Description)
	}
	if err := os.WriteFile(filepath.Join(dir, "matrix.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := matrixPage.Execute(&b, v); err != nil {
		return fmt.Errorf("matrix page: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "matrix.html"), b.Bytes(), 0o644)
}

// cellOf returns the cell of lock under scenario.
func cellOf(cells []MatrixCell, lock, scenario string) MatrixCell {
	for _, c := range cells {
		if c.Lock == lock && c.Scenario == scenario {
			return c
		}
	}
	return MatrixCell{NA: "not run"}
}
