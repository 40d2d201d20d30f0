package report

import (
	"github.com/lockcheck/lockcheck/history"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
)

// TestShortOf_AnyOf: a row requiring either of two figures is short only
// when neither was met, and its coverage text shows their sum.
func TestShortOf_AnyOf(t *testing.T) {
	req := checker.Coverage{checker.AnyOf(history.GrantedBothSides, history.LostRetaken): 1}
	if s := ShortOf(checker.Coverage{history.LostRetaken: 1}, req); len(s) != 0 {
		t.Errorf("lost_retaken met: short %v, want none", s)
	}
	if s := ShortOf(checker.Coverage{history.LostAtHeal: 4}, req); len(s) != 1 || s[0] != "granted_both_sides|lost_retaken 0 < 1" {
		t.Errorf("neither met: short %v", s)
	}
	row := VerifyRow{Requires: req, Coverage: checker.Coverage{history.GrantedBothSides: 2, history.LostRetaken: 1}}
	if got := row.CoverageText(); got != "granted_both_sides|lost_retaken=3/1" {
		t.Errorf("CoverageText = %q", got)
	}
}

// TestShortAdvice: more --budget is advised only where it can help: a
// scenario whose required figure rose, or that ran too few times to tell;
// one whose figure stayed at 0 through five runs or more is told that
// more budget will not help, and what to change.
func TestShortAdvice(t *testing.T) {
	v := &Verify{Rows: []VerifyRow{
		{Scenario: "pause", Status: StatusNotExercised, Runs: 12, Requires: checker.Coverage{checker.HeldPastTried: 3}, Coverage: checker.Coverage{checker.HeldPastTried: 0}},
		{Scenario: "overrun", Status: StatusNotExercised, Runs: 9, Requires: checker.Coverage{checker.LateReleaseTaken: 15}, Coverage: checker.Coverage{checker.LateReleaseTaken: 11}},
		{Scenario: "crash", Status: StatusNotExercised, Runs: 2, Requires: checker.Coverage{checker.AbandonedTaken: 3}},
		{Scenario: "contention", Status: StatusPassed, Runs: 1},
		{Scenario: "kill-none", Status: StatusNotExercised, Runs: 2, Meaning: "400 of 410 acquires ended indeterminate"},
	}}
	got := strings.Join(shortAdvice(v), "\n")
	for _, want := range []string{"not exercised: overrun, crash: raise --budget", "not exercised: pause (held_past_tried 0 in 12 runs), kill-none (400 of 410 acquires ended indeterminate): more --budget will not help"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "pause: raise") || strings.Contains(got, "contention") {
		t.Errorf("advice %q: budget advised where it cannot help, or a passed scenario named", got)
	}
}
