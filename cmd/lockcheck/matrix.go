package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/harness"
)

func matrixCmd(ctx context.Context, args []string) (int, error) {
	var cfg harness.MatrixConfig
	var expect string
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.StringSliceVar(&cfg.Locks, "locks", harness.MatrixLocks, "the rows: locks (see lockcheck list)")
	fs.StringSliceVar(&cfg.Scenarios, "faults", nil, "the columns: scenarios (default all; see below)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "run length of each cell (default: the scenario's, 10s or 12s)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the first run of every cell")
	fs.StringVar(&expect, "expect", "", `file of "LOCK SCENARIO valid|invalid" lines: exit 1 if a cell differs`)
	fs.IntVar(&cfg.Attempts, "attempts", 1, "runs (seeds) a cell expected invalid gets before it counts as valid")
	fs.StringVar(&cfg.OutDir, "out", "results", "results root: the matrix goes to OUT/matrix/<timestamp>")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck matrix [flags]\n\nruns every lock under every scenario and writes matrix.md and matrix.html\n\nflags:")
		fs.PrintDefaults()
		fmt.Fprintln(os.Stderr, "\nscenarios:")
		for _, s := range harness.Scenarios() {
			fmt.Fprintf(os.Stderr, "  %-15s %s\n", s.Name, s.Description)
		}
	}
	if done, code, err := parse(fs, args); done {
		return code, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("matrix takes no arguments, got %q", fs.Args())}
	}
	if expect != "" {
		var err error
		if cfg.Expect, err = harness.ReadExpect(expect); err != nil {
			return exitUsage, err
		}
	}
	sweepLeftovers()
	cfg.Progress = os.Stdout
	cfg.Args = append([]string{"lockcheck", "matrix"}, args...)
	res, err := harness.Matrix(ctx, cfg)
	if err != nil {
		if errors.Is(err, harness.ErrConfig) {
			return exitUsage, err
		}
		return exitFailed, err
	}
	fmt.Printf("\nmatrix: %s\n", filepath.Join(res.Dir, "matrix.md"))
	fmt.Printf("report: %s\n", filepath.Join(res.Dir, "matrix.html"))
	if miss := res.Mismatches(); len(miss) > 0 {
		var cells []string
		for _, c := range miss {
			cells = append(cells, fmt.Sprintf("%s/%s is %s, expected %s", c.Lock, c.Scenario, c.Verdict, c.Expected))
		}
		return exitInvalid, fmt.Errorf("%d cell(s) differ from %s: %s", len(miss), expect, strings.Join(cells, "; "))
	}
	if ctx.Err() != nil {
		return exitUnknown, errors.New("interrupted: cells not run are marked n/a")
	}
	return exitValid, nil
}
