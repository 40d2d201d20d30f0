package report

import (
	"bytes"
	"fmt"
	"html/template"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/ext"
)

// Section is one part of report.html, drawn from the run's history and
// findings. Each lives in a file of its own (section_<name>.go).
type Section struct {
	// Name is the section's id in the page.
	Name string
	// Template is the section's html/template text (the page wraps it in
	// <section id="Name">); it can call seconds (history.Seconds).
	Template string
	// Data computes what the template shows; nil: the View itself.
	Data func(v *View) any
}

// View is the run as the sections see it, computed once per page.
type View struct {
	Meta     Meta
	Findings checker.Findings
	Ops      []history.Op
	Stats    *Stats
	// HgrmFiles are the latency-<op>.hgrm files written beside the page.
	HgrmFiles []string
}

var added ext.Added[Section]

// Register adds a section at the end of every report.html from
// here on, until the func it returns unregisters it.
func Register(s Section) (unregister func()) { return added.Add(s) }

// All returns report.html's sections, in page order, those
// Register added last. To add one: a file with its Section, and a
// line here.
func All() []Section {
	return added.With([]Section{reproduceSection, checkersSection, resourceSection, coverageSection, violationsSection, latencySection, throughputSection,
		contentionSection, leasesSection, nodesSection, serversSection, agentsSection})
}

// render draws the sections for v.
func render(sections []Section, v *View) ([]renderedSection, error) {
	out := make([]renderedSection, 0, len(sections))
	for _, s := range sections {
		t, err := template.New(s.Name).Funcs(template.FuncMap{"seconds": history.Seconds, "notJudged": NotJudgedLine}).Parse(s.Template)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		var data any = v
		if s.Data != nil {
			data = s.Data(v)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		out = append(out, renderedSection{Name: s.Name, HTML: template.HTML(b.String())})
	}
	return out, nil
}

type renderedSection struct {
	Name string
	HTML template.HTML
}
