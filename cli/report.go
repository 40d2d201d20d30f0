package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
)

func reportCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	compare := fs.Bool("compare", false, "write one page comparing two runs: report --compare BEFORE AFTER")
	out := fs.String("out", "compare.html", "with --compare: the page to write")
	maxReg := fs.String("max-regression", "", "with --compare: exit 99 if the after run's acquisitions/s fell, or its acquire p99 rose, by more than this (e.g. 10%), or its verdict is worse")
	var opt checker.Options
	checkBoundFlags(fs, &opt)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck report DIR   |   lockcheck report --compare BEFORE_DIR AFTER_DIR [--out FILE]")
		fs.PrintDefaults()
	}
	if done, code, err := parse(fs, args); done {
		return code, err
	}
	if *compare {
		if fs.NArg() != 2 {
			return exitUsage, usageError{fmt.Errorf("report --compare takes two run dirs (before, after), got %d", fs.NArg())}
		}
		limit := -1.0
		if *maxReg != "" {
			v, err := strconv.ParseFloat(strings.TrimSuffix(*maxReg, "%"), 64)
			if err != nil || v < 0 || !strings.HasSuffix(*maxReg, "%") {
				return exitUsage, usageError{fmt.Errorf("--max-regression %q: want a percentage, e.g. 10%%", *maxReg)}
			}
			limit = v / 100
		}
		regs, err := harness.Compare(ctx, fs.Arg(0), fs.Arg(1), *out, opt, limit)
		if err != nil {
			return exitUsage, err
		}
		fmt.Println("wrote", *out)
		for _, r := range regs {
			fmt.Println("regression:", r)
		}
		if len(regs) > 0 {
			return exitThreshold, nil
		}
		return exitValid, nil
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{fmt.Errorf("report takes one run dir, got %d", fs.NArg())}
	}
	rep, err := harness.Report(ctx, fs.Arg(0), opt)
	if err != nil {
		return failed(err)
	}
	if rep.CutOff != "" {
		fmt.Fprintf(os.Stderr, "lockcheck: %s\n", rep.CutOff)
	}
	fmt.Printf("verdict: %s\nreport: %s\n", rep.Verdict, filepath.Join(fs.Arg(0), "report.html"))
	return exitFor(rep.Verdict), nil
}
