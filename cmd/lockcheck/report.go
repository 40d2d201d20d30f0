package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
)

func reportCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	compare := fs.Bool("compare", false, "write one page comparing two runs: report --compare BEFORE AFTER")
	out := fs.String("out", "compare.html", "with --compare: the page to write")
	var opt checker.Options
	fs.DurationVar(&opt.Timeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check")
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
		if err := harness.Compare(ctx, fs.Arg(0), fs.Arg(1), *out, opt); err != nil {
			return exitUsage, err
		}
		fmt.Println("wrote", *out)
		return exitValid, nil
	}
	if fs.NArg() != 1 {
		return exitUsage, usageError{fmt.Errorf("report takes one run dir, got %d", fs.NArg())}
	}
	rep, err := harness.Report(ctx, fs.Arg(0), opt)
	if err != nil {
		return exitUsage, err
	}
	fmt.Printf("verdict: %s\nreport: %s\n", rep.Verdict, filepath.Join(fs.Arg(0), "report.html"))
	return exitFor(rep.Verdict), nil
}
