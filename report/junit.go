package report

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitProblem `xml:"failure,omitempty"`
	Error   *junitProblem `xml:"error,omitempty"`
	Skipped *junitProblem `xml:"skipped,omitempty"`
	Out     string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one test case per checker; an invalid checker is a
// failure carrying its violations, an unknown one an error.
func writeJUnit(path string, rep checker.Findings, meta Meta, s *Stats) error {
	suite := junitSuite{Name: "lockcheck." + meta.Lock, Time: fmt.Sprintf("%.3f", s.Duration.Seconds())}
	for _, c := range rep.Checkers {
		tc := junitCase{Class: "lockcheck." + meta.Lock, Name: c.Name, Time: "0"}
		if d, err := time.ParseDuration(c.Elapsed); err == nil {
			tc.Time = fmt.Sprintf("%.3f", d.Seconds())
		}
		var lines []string
		for _, v := range c.Violations {
			lines = append(lines, v.Message)
		}
		if c.ViolationCount > len(c.Violations) {
			lines = append(lines, fmt.Sprintf("... %d more", c.ViolationCount-len(c.Violations)))
		}
		switch c.Verdict {
		case checker.Invalid:
			suite.Failures++
			msg := fmt.Sprintf("%d violation(s)", c.ViolationCount)
			if len(c.Violations) > 0 {
				msg += ": " + c.Violations[0].Message
			}
			tc.Failure = &junitProblem{Message: msg, Type: "invalid", Text: strings.Join(lines, "\n")}
		case checker.Unknown:
			suite.Errors++
			tc.Error = &junitProblem{Message: "unknown: " + c.Note, Type: "unknown", Text: strings.Join(c.UnknownKeys, "\n")}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	for _, t := range meta.Thresholds {
		tc := junitCase{Class: "lockcheck." + meta.Lock + ".thresholds", Name: t.Threshold, Time: "0"}
		if !t.Pass {
			suite.Failures++
			msg := fmt.Sprintf("threshold failed: %s (actual %g)", t.Threshold, t.Actual)
			if t.Error != "" {
				msg = "threshold failed: " + t.Threshold + ": " + t.Error
			}
			tc.Failure = &junitProblem{Message: msg, Type: "threshold"}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	return writeSuite(path, suite)
}

// writeSuite writes suite, its test count filled in, as a junit.xml.
func writeSuite(path string, suite junitSuite) error {
	suite.Tests = len(suite.Cases)
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{suite}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
