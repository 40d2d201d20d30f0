package cli

import (
	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/report"
)

// thresholdFlag adds --threshold (repeatable) to fs.
func thresholdFlag(fs *flag.FlagSet, dst *[]string) {
	fs.StringArrayVar(dst, "threshold", nil, "a performance gate over the run's figures, e.g. acquire.p99<5ms, acquisitions_per_sec>=2000, success_ratio>5%, stuck_acquires==0 (repeatable; a failed one exits 99 when the lock is valid)")
}

// parseThresholds parses every --threshold, or says what is wrong with
// the first bad one.
func parseThresholds(exprs []string) ([]report.Threshold, error) {
	var ts []report.Threshold
	for _, e := range exprs {
		t, err := report.ParseThreshold(e)
		if err != nil {
			return nil, usageError{err}
		}
		ts = append(ts, t)
	}
	return ts, nil
}
