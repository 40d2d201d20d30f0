package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/battery"
	"github.com/lockcheck/lockcheck/scenario"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/cluster"
)

func matrixCmd(ctx context.Context, args []string) (int, error) {
	var cfg battery.MatrixConfig
	var expect string
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.StringSliceVar(&cfg.Locks, "locks", battery.MatrixLocks, "the rows: locks (see lockcheck list)")
	var own userLockFlags
	own.add(fs)
	var backend string
	var ext externalOpts
	fs.StringVar(&backend, "backend", cluster.Local, "where Redis runs: local (redis-server processes) or external (a Redis you run: --redis, --sentinel or --cluster)")
	externalFlags(fs, &ext)
	fs.StringSliceVar(&cfg.Scenarios, "faults", nil, "the columns: scenarios (default "+strings.Join(scenario.MatrixColumns, ",")+"; any of those below)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "run length of each cell (default: the scenario's, 10s or 12s)")
	fs.DurationVar(&cfg.TTL, "ttl", 0, "lock TTL of each cell (default: the scenario's, 1s to 10s)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the first run of every cell")
	fs.StringVar(&expect, "expect", "", `file of "LOCK SCENARIO valid|invalid" lines: exit 1 if a cell differs`)
	fs.IntVar(&cfg.Attempts, "attempts", 1, "runs (seeds) a cell expected invalid gets before it counts as valid")
	fs.StringVar(&cfg.OutDir, "out", "results", "results root: the matrix goes to OUT/matrix/<timestamp>")
	var seeds int
	var keepGoing bool
	fs.IntVar(&seeds, "seeds", 1, "matrices, with seeds --seed, --seed+1000, ...; stops at the first that differs from --expect unless --keep-going")
	fs.BoolVar(&keepGoing, "keep-going", false, "with --seeds: run every matrix even after one differed")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockcheck matrix [flags]\n\nruns every lock under every scenario and writes matrix.md and matrix.html\n\nflags:")
		fs.PrintDefaults()
		fmt.Fprintln(os.Stderr, "\nscenarios:")
		for _, s := range scenario.All() {
			fmt.Fprintf(os.Stderr, "  %-15s %s\n", s.Name, s.Description)
		}
	}
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	reg, names, err := own.registry()
	if err != nil {
		return exitUsage, err
	}
	if cfg.Cluster.External, err = ext.config(fs, backend); err != nil {
		return exitUsage, err
	}
	cfg.Cluster.Backend = backend
	if len(names) > 0 && !fs.Changed("locks") {
		cfg.Locks = nil // the user's rows only, unless --locks asks for more
	}
	cfg.Registry, cfg.Locks = reg, append(cfg.Locks, names...)
	if expect != "" {
		if cfg.Expect, err = battery.ReadExpect(expect); err != nil {
			return exitUsage, err
		}
	}
	sweepLeftovers()
	cfg.Progress = os.Stdout
	cfg.Args = append([]string{"lockcheck", "matrix"}, args...)
	seed := cfg.Seed
	return eachSeed(ctx, seeds, keepGoing, func(i int) (int, error) {
		cfg.Seed = seed + int64(i)*1000
		return matrixOnce(ctx, cfg, expect)
	})
}

// matrixOnce runs one matrix and says whether it met the expectations.
func matrixOnce(ctx context.Context, cfg battery.MatrixConfig, expect string) (int, error) {
	res, err := battery.Matrix(ctx, cfg)
	if err != nil {
		return failed(err)
	}
	fmt.Printf("\nmatrix: %s\n", filepath.Join(res.Dir, "matrix.md"))
	fmt.Printf("report: %s\n", filepath.Join(res.Dir, "matrix.html"))
	if miss := res.Mismatches(); len(miss) > 0 {
		var cells []string
		for _, c := range miss {
			cells = append(cells, fmt.Sprintf("%s/%s is %s, expected %s", c.Lock, c.Scenario, c.Verdict, c.Expected))
		}
		fmt.Fprintf(os.Stderr, "lockcheck: %d cell(s) differ from %s: %s\n", len(miss), expect, strings.Join(cells, "; "))
		return exitInvalid, nil
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "lockcheck: interrupted: cells not run are marked n/a")
		return exitUnknown, nil
	}
	return exitValid, nil
}
