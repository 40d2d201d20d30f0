package report

import (
	"github.com/lockcheck/lockcheck/history"
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
