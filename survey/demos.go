package survey

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Demo is a standalone demonstration of a mechanism the page states: a
// small program in the library's own language that runs the library as
// its documentation shows, against redis-server processes it starts
// itself (the binary $REDIS_SERVER, else redis-server on PATH), with no
// lockcheck in the loop. It performs the fault the mechanism needs (a
// process stopped, a node restarted, the clock shim), prints what it
// saw, stops everything it started by PID, and exits 1 when the
// mechanism shows, 0 when it does not, 2 when it could not run.
type Demo struct {
	// Name is its name on the page and in survey/data/demos.
	Name string
	// Dir is where Cmd runs, from the repository's root ("" the root).
	Dir string
	Cmd []string
	// Shows are the Mechanisms keys ("library scenario") whose mechanism
	// it shows.
	Shows []string
	// Departs says where it departs from the library's README (a
	// timeout, a connection reused), "" where it does not.
	Departs string
}

// Demos are every demonstration, by language.
var Demos = slices.Concat(phpDemos, goDemos, pythonDemos)

// DemoFor is the demonstration of the mechanism keyed key, if any.
func DemoFor(key string) (Demo, bool) {
	i := slices.IndexFunc(Demos, func(d Demo) bool { return slices.Contains(d.Shows, key) })
	if i < 0 {
		return Demo{}, false
	}
	return Demos[i], true
}

// DemoRun is a demonstration's last run: its exit status (1: the
// mechanism showed), how long it took, what it printed (Output, stdout
// and stderr as they came; Said, the last line of its stdout: its
// conclusion), and the revision of the tree it ran from.
type DemoRun struct {
	Exit     int    `json:"exit"`
	Elapsed  string `json:"elapsed"`
	Said     string `json:"said"`
	Output   string `json:"output"`
	Revision string `json:"revision"`
}

// Command is d's command line as the page prints it, run from the
// repository's root.
func (d Demo) Command() string {
	args := slices.Clone(d.Cmd)
	for i, a := range args {
		if strings.Contains(a, " ") {
			args[i] = `"` + a + `"`
		}
	}
	line := strings.Join(args, " ")
	if d.Dir != "" {
		line = "(cd " + d.Dir + " && " + line + ")"
	}
	return line
}

// result is what run says of d: its exit and what that means, and its
// last line.
func (run DemoRun) result() string {
	meant := map[int]string{0: "the mechanism did not show", 1: "the mechanism showed"}[run.Exit]
	out := fmt.Sprintf("exit %d in %s", run.Exit, run.Elapsed)
	if meant == "" {
		meant = "it could not run"
	}
	out += " (" + meant + ")"
	if run.Said != "" {
		out += ": \"" + run.Said + "\""
	}
	return out
}

// shownAlone is a break's line on its demonstration: the command and
// its last run, or why none can show the mechanism.
func shownAlone(m Meta, key string, mech Mechanism) string {
	d, ok := DemoFor(key)
	switch {
	case !ok && mech.NoDemo != "":
		return "Shown alone: no demonstration can show it without lockcheck: " + mech.NoDemo + "\n\n"
	case !ok:
		return "Shown alone: no demonstration yet.\n\n"
	}
	line := fmt.Sprintf("Shown alone: `%s` (%s)", d.Command(), d.Name)
	if run, ran := m.Demos[d.Name]; ran {
		line += ", " + run.result()
	} else {
		line += ", not run by the survey yet"
	}
	return line + ".\n\n"
}

// writeDemos lists every demonstration: what it shows, where it departs
// from the library's README, and its last run.
func writeDemos(b *strings.Builder, m Meta) {
	b.WriteString("## The demonstrations\n\nEach a program in the library's own language that runs the library as its documentation shows, against redis-server processes it starts itself, with no lockcheck in the loop; it performs the fault the mechanism needs, and exits 1 when the mechanism shows, 0 when it does not. `make survey` runs them all; CI runs each through a test in survey/golocks.\n\n| demonstration | command | shows | departs from the README | last run |\n|---|---|---|---|---|\n")
	for _, d := range Demos {
		last := "not run yet"
		if run, ok := m.Demos[d.Name]; ok {
			last = strings.ReplaceAll(run.result(), "|", "\\|")
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s |\n", d.Name, d.Command(), strings.Join(d.Shows, ", "), cmp.Or(d.Departs, "no"), last)
	}
	b.WriteString("\n")
}
