package survey

import "slices"

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
