package cli

import (
	"fmt"
	"time"

	"github.com/docker/go-units"
	"github.com/lockcheck/lockcheck/checker"
	flag "github.com/spf13/pflag"
)

// checkFlags declares the check's options, once for every command that
// checks a history (run, check): the lease model's clock tolerance and
// info horizon (0 given means 0, not the default), and the bounds.
func checkFlags(fs *flag.FlagSet, opt *checker.Options) {
	fs.Var((*exactDuration)(&opt.ClockTolerance), "clock-tolerance", "clock tolerance eps of the lease model (default 25ms; on --backend external, plus the worst of 20 PING round trips; lockcheck check: the run's)")
	fs.Var((*exactDuration)(&opt.InfoHorizon), "info-horizon", "how long after it returned an indeterminate op may take effect (default: the op timeout + 1s, plus how long a fault holds Redis still; lockcheck check: the run's)")
	checkBoundFlags(fs, opt)
}

// exactDuration is a duration flag whose 0, given, means 0 to the checker
// (whose zero Options field means its default): checker.Exactly.
type exactDuration time.Duration

func (d *exactDuration) String() string {
	if *d == exactDuration(checker.None) {
		return "0s"
	}
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *exactDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = exactDuration(checker.Exactly(v))
	return nil
}

func (d *exactDuration) Type() string { return "duration" }

// checkBoundFlags declares the check's bounds, the same on every command
// that checks: --check-timeout and --check-memory.
func checkBoundFlags(fs *flag.FlagSet, opt *checker.Options) {
	fs.DurationVar(&opt.Timeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check of each key bucket (a history over 64 MB is checked in buckets); keys not done are unknown")
	fs.Var((*memFlag)(&opt.Memory), "check-memory", fmt.Sprintf("bound on the memory of the linearizability check's searches, shared by the keys checked at once, and on the whole process's while they run (e.g. 200MB, 2GB); a key past it is unknown (default a quarter of the RAM, at most 8 GiB, to leave the rest to Redis, the clients and CI beside the check: %s)", units.BytesSize(float64(checker.DefaultMemory()))))
}

// memFlag is a size in bytes written as 200MB or 2GiB (go-units, 1024-based).
type memFlag int64

func (m *memFlag) String() string {
	if *m == 0 {
		return ""
	}
	return units.BytesSize(float64(*m))
}

func (m *memFlag) Set(s string) error {
	n, err := units.RAMInBytes(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a size such as 200MB or 2GB")
	}
	*m = memFlag(n)
	return nil
}

func (m *memFlag) Type() string { return "size" }
