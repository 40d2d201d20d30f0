package cli

import (
	"fmt"

	"github.com/lockcheck/lockcheck/lockimpl/process"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// userLockFlags are matrix's and bench's rows of the user's own: specs
// and lock processes beside the built-in locks.
type userLockFlags struct {
	specs, cmds []string
	perClient   bool
}

func (u *userLockFlags) add(fs *flag.FlagSet) {
	fs.StringArrayVar(&u.specs, "lock-spec", nil, "a row of your own: a TOML file of Lua scripts (repeatable)")
	fs.StringArrayVar(&u.cmds, "lock-cmd", nil, "a row of your own: a lock process, named cmd1, cmd2, ... (repeatable)")
	fs.BoolVar(&u.perClient, "lock-cmd-per-client", false, "every --lock-cmd runs one process per client (a PHP lock, as PHP runs)")
}

// registry returns the built-in locks with the user's registered beside
// them, and the user's lock names.
func (u *userLockFlags) registry() (*lockimpl.Registry, []string, error) {
	reg := lockimpl.All()
	var names []string
	var mks []func() (lockimpl.Entry, error)
	for _, path := range u.specs {
		mks = append(mks, specLock(path))
	}
	for i, cmd := range u.cmds {
		mks = append(mks, cmdLock(fmt.Sprintf("cmd%d", i+1), cmd, "", u.perClient))
	}
	for _, mk := range mks {
		e, err := mk()
		if err != nil {
			return nil, nil, err
		}
		reg.Register(e)
		names = append(names, e.Name)
	}
	return reg, names, nil
}

// specLock builds the lock of --lock-spec path (process.FromSpec).
func specLock(path string) func() (lockimpl.Entry, error) {
	return func() (lockimpl.Entry, error) { return process.FromSpec(path) }
}

// cmdLock builds the lock of --lock-cmd cmdline named name
// (process.FromCmd).
func cmdLock(name, cmdline, topology string, perClient bool) func() (lockimpl.Entry, error) {
	return func() (lockimpl.Entry, error) { return process.FromCmd(name, cmdline, topology, perClient), nil }
}
