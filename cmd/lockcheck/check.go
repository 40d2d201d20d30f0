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

func checkCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var opt checker.Options
	fs.DurationVar(&opt.ClockTolerance, "clock-tolerance", 0, "clock tolerance eps of the lease model (default: the run's, else 25ms)")
	fs.DurationVar(&opt.InfoHorizon, "info-horizon", 0, "how long after it returned an indeterminate op may take effect (default: the run's, else 10s)")
	fs.DurationVar(&opt.Timeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check; keys not done are unknown")
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
	path := fs.Arg(0)
	rep, _, err := harness.CheckDir(ctx, path, opt)
	if err != nil {
		return exitUsage, err
	}
	dir := path
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir = filepath.Dir(path)
	}
	printChecks(os.Stdout, rep, dir)
	fmt.Printf("verdict: %s\n", rep.Verdict)
	return exitFor(rep.Verdict), nil
}
