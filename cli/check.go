package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/report"
)

func checkCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var opt checker.Options
	checkFlags(fs, &opt)
	out := fs.String("out", "", "directory for results.json and the visualizations (default: check-<timestamp>/ in the run dir; for a history file outside a run dir, results/check/<timestamp>/ with results/check/latest)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck check [flags] PATH   (PATH: a run dir or a history.jsonl)")
		fs.PrintDefaults()
	}
	if done, code, err := parse(fs, args); done {
		return code, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{fmt.Errorf("check takes one PATH (a run dir or a history.jsonl), got %d", fs.NArg())}
	}
	hpath := fs.Arg(0)
	if st, err := os.Stat(hpath); err == nil && st.IsDir() {
		hpath = filepath.Join(hpath, "history.jsonl")
	}
	if st, err := os.Stat(hpath); err == nil && st.Size() > checker.BucketBytes {
		fmt.Fprintf(os.Stderr, "checking %s (%d MB), key bucket by key bucket\n", hpath, st.Size()>>20)
	}
	rep, dir, err := harness.Check(ctx, fs.Arg(0), *out, opt)
	if err != nil {
		return failed(err)
	}
	if rep.CutOff != "" {
		fmt.Fprintf(os.Stderr, "lockcheck: %s\n", rep.CutOff)
	}
	report.TextChecks(os.Stdout, rep, dir)
	fmt.Printf("verdict: %s\nresults: %s\n", rep.Verdict, filepath.Join(dir, "results.json"))
	return exitFor(rep.Verdict), nil
}
