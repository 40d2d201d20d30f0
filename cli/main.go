// Package cli is lockcheck's command line: cmd/lockcheck is Main, and a
// program that registers locks of its own (lockimpl.Register) and calls
// Main is lockcheck with those locks built in (survey/cmd/lockcheck-survey).
// See README.md.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
)

// Exit statuses, as the README lists them.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUsage   = 2
	exitUnknown = 3
	exitFailed  = 4
	// exitThreshold: the lock was valid but a --threshold failed (k6's
	// status for a failed threshold); a safety verdict wins over it.
	exitThreshold = 99
	// exitInterrupted: Ctrl-C came before there was a verdict to give
	// (while Redis was starting, before the first op, before a bench's
	// first cell), or twice: the shell's 128+SIGINT.
	exitInterrupted = 130
)

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ error }

// Main runs the command line args (without the program's name) and
// returns the exit status.
func Main(args []string) int {
	// go-redis logs each dial a killed node refuses; the history already
	// records what those ops did, and the log would bury the progress line.
	redis.SetLogger(quietLogger{})
	return run(args)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

const usage = `lockcheck: load-test and verify Redis distributed locks

usage:
  lockcheck run   [flags]       run a lock under load against local Redis, check it, write results
  lockcheck check [flags] PATH  re-check a run dir or history.jsonl offline
  lockcheck report DIR          re-check a run and write report.html, junit.xml, latency-*.hgrm
  lockcheck report --compare BEFORE AFTER [--out compare.html]
                                one page putting two runs side by side
  lockcheck bench [flags]       a sweep of locks × clients × keys, with an optional redis-benchmark baseline
  lockcheck verify [flags]      a battery of scenarios for one lock, each until its coverage is met; gates on its guarantees
  lockcheck shrink --from DIR   a broken run shrunk to the smallest plan that still breaks with the same finding: plan.json, run by lockcheck run --plan
  lockcheck matrix [flags]      locks × fault scenarios, one run per cell: matrix.md, matrix.html; --expect gates on it
  lockcheck agent --join ADDR   clients on this machine for a coordinator elsewhere (lockcheck run --agents N)
  lockcheck k8s [run flags] --agents N --agent-image IMAGE
                                print Kubernetes manifests: a coordinator Job and Service, an Indexed Job of N agents, a Secret
  lockcheck image [--tag TAG]   build a container image of this lockcheck from local files (for agents in containers or pods)
  lockcheck list                the locks, faults and topologies
  lockcheck serve --lock NAME   a registered lock as a lock process (--lock-cmd "lockcheck serve --lock NAME" --lock-cmd-per-client:
                                a pause then stops the whole process, the lock's own goroutines too)
  lockcheck cleanup             remove temp dirs left by runs that were killed (run and bench do it too)

"lockcheck COMMAND --help" shows the flags of a command.
exit status: 0 valid, 1 invalid, 2 usage or config error, 3 unknown, 4 the harness failed, 99 valid but a --threshold failed (report --compare: a regression), 130 interrupted before a verdict`

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return exitUsage
	}
	ctx, stop := interruptContext()
	defer stop()
	var err error
	code := exitValid
	switch args[0] {
	case "run":
		code, err = runCmd(ctx, args[1:])
	case "check":
		code, err = checkCmd(ctx, args[1:])
	case "report":
		code, err = reportCmd(ctx, args[1:])
	case "bench":
		code, err = benchCmd(ctx, args[1:])
	case "matrix":
		code, err = matrixCmd(ctx, args[1:])
	case "verify":
		code, err = verifyCmd(ctx, args[1:])
	case "shrink":
		code, err = shrinkCmd(ctx, args[1:])
	case "agent":
		code, err = agentCmd(ctx, args[1:])
	case "k8s":
		code, err = k8sCmd(ctx, args[1:])
	case "image":
		code, err = imageCmd(ctx, args[1:])
	case "cleanup":
		code, err = cleanupCmd(args[1:])
	case "list":
		code, err = listCmd(args[1:])
	case "serve":
		code, err = serveCmd(args[1:])
	case "help", "-h", "--help":
		fmt.Println(usage)
		return exitValid
	default:
		err = usageError{fmt.Errorf("unknown command %q (want run, check, report, bench, verify, shrink, matrix, agent, k8s, image, list, serve or cleanup)", args[0])}
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Not a harness failure: the user stopped it before a verdict.
		// Whatever was recorded is written; Redis is stopped.
		fmt.Fprintf(os.Stderr, "lockcheck: interrupted before a verdict (%v); nothing is left running\n", err)
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockcheck:", err)
		var ue usageError
		if errors.As(err, &ue) || errors.Is(err, harness.ErrConfig) {
			return exitUsage
		}
		if code == exitValid {
			return exitFailed
		}
	}
	return code
}

// interruptContext is cancelled by the first SIGINT or SIGTERM, so the run
// stops, writes what it recorded, checks it and reports. A second signal
// kills Redis, removes the check's spill files and exits at once.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(os.Stderr, "\nlockcheck: interrupted: stopping clients, writing and checking the history (again to quit at once)")
		cancel()
		select {
		case <-sigs:
			cluster.Emergency()
			checker.RemoveSpills()
			fmt.Fprintln(os.Stderr, "lockcheck: interrupted twice: quit")
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// failed is the exit of a command that ended with err before a
// verdict: a bad configuration (2) or the harness's failure (4).
func failed(err error) (int, error) {
	if errors.Is(err, harness.ErrConfig) {
		return exitUsage, err
	}
	return exitFailed, err
}

func exitFor(v checker.Verdict) int {
	switch v {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

// parse parses a command's flags and checks their values against
// flagFloor. done is set when the command must return at once: with
// exitValid after --help, or exitUsage and the error.
func parse(fs *flag.FlagSet, args []string) (done bool, code int, err error) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return true, exitValid, nil
		}
		return true, exitUsage, usageError{err}
	}
	if err := checkFloors(fs); err != nil {
		return true, exitUsage, usageError{err}
	}
	return false, 0, nil
}

// parseNoArgs is parse for a command that takes flags only.
func parseNoArgs(fs *flag.FlagSet, args []string) (done bool, code int, err error) {
	if done, code, err := parse(fs, args); done {
		return done, code, err
	}
	if fs.NArg() > 0 {
		return true, exitUsage, usageError{fmt.Errorf("%s takes no arguments, got %q", fs.Name(), fs.Args())}
	}
	return false, 0, nil
}

// flagFloor is the least value of every numeric flag of every command, by
// name: a count or a TTL of 0 would otherwise run with a default while the
// header prints 0, and a gate that passes on a misread configuration is
// worse than none. Flags where 0 has a meaning of its own (no bound, no
// pause, no tolerance) take 0.
var flagFloor = map[string]int64{
	"clients": 1, "keys": 1, "nodes": 1, "attempts": 1,
	"ttl": int64(time.Millisecond), "op-timeout": 1, "check-timeout": 1, "nemesis-interval": 1, "nemesis-duration": 1,
	"duration": 0, "ops": 0, "hold": 0, "think": 0, "margin": 0, "extend-every": 0, "repl-lag": 0,
	"restart-delay": 0, "warmup": 0, "clock-tolerance": 0, "info-horizon": 0,
	"runs": 1, "measure": 1,
}

// flagCeiling bounds the flags that the checker adds to history times.
var flagCeiling = map[string]int64{
	"ttl": history.MaxTTLms * int64(time.Millisecond),
}

func checkFloors(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		floor, ok := flagFloor[f.Name]
		if !ok || err != nil {
			return
		}
		var vals []int64
		switch f.Value.Type() {
		case "duration":
			d, _ := fs.GetDuration(f.Name)
			vals = []int64{int64(d)}
		case "int", "int64":
			n, _ := strconv.ParseInt(f.Value.String(), 10, 64)
			vals = []int64{n}
		case "intSlice":
			ns, _ := fs.GetIntSlice(f.Name)
			for _, n := range ns {
				vals = append(vals, int64(n))
			}
		}
		for _, v := range vals {
			show := strconv.FormatInt(v, 10)
			if f.Value.Type() == "duration" {
				show = time.Duration(v).String()
			}
			switch ceiling, capped := flagCeiling[f.Name]; {
			case v < floor && floor == 0:
				err = fmt.Errorf("--%s %s: want 0 or more", f.Name, show)
			case v < floor && f.Value.Type() == "duration":
				err = fmt.Errorf("--%s %s: want at least %v", f.Name, show, time.Duration(floor))
			case v < floor:
				err = fmt.Errorf("--%s %s: want at least %d", f.Name, show, floor)
			case capped && v > ceiling:
				err = fmt.Errorf("--%s %s: want at most %v", f.Name, show, time.Duration(ceiling))
			}
		}
	})
	return err
}
