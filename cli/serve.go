package cli

import (
	"fmt"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/lockimpl/process"
)

// serveCmd serves a registered lock on the lock-process protocol, for
// lockcheck's own --lock-cmd: one process per client puts the lock's own
// goroutines (a watchdog, a library's renewals) under the pause and
// crash faults, as a stop-the-world pause stops them.
func serveCmd(args []string) (int, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	name := fs.String("lock", "", "the registered lock to serve (see lockcheck list)")
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	e, err := lockimpl.All().Lookup(*name)
	if err != nil {
		return exitUsage, usageError{err}
	}
	env := process.EnvFromProcess()
	if len(env.Addrs) == 0 {
		return exitUsage, usageError{fmt.Errorf("serve: LOCKCHECK_REDIS_ADDRS is not set: run it as a lock process (lockcheck run --lock-cmd \"lockcheck serve --lock %s\")", *name)}
	}
	l, err := e.Factory(env)
	if err != nil {
		return exitFailed, err
	}
	defer lockimpl.Close(l)
	if err := process.Serve(l, env.OpTimeout, os.Stdin, os.Stdout); err != nil {
		return exitFailed, err
	}
	return exitValid, nil
}
