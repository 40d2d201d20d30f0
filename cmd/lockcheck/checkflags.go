package main

import (
	"fmt"

	"github.com/docker/go-units"
	"github.com/lockcheck/lockcheck/checker"
	flag "github.com/spf13/pflag"
)

// checkBoundFlags declares the check's bounds, the same on every command
// that checks: --check-timeout and --check-memory.
func checkBoundFlags(fs *flag.FlagSet, opt *checker.Options) {
	fs.DurationVar(&opt.Timeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check of each key bucket (a history over 64 MB is checked in buckets); keys not done are unknown")
	fs.Var((*memFlag)(&opt.Memory), "check-memory", fmt.Sprintf("bound on the memory of the linearizability check's searches, shared by the keys checked at once (e.g. 200MB, 2GB); a key past its share is unknown (default half the RAM: %s)", units.BytesSize(float64(checker.DefaultMemory()))))
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
