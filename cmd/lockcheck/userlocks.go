package main

import (
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// userLockFlags are matrix's and bench's rows of the user's own: specs
// and lock processes beside the built-in locks.
type userLockFlags struct{ specs, cmds []string }

func (u *userLockFlags) add(fs *flag.FlagSet) {
	fs.StringArrayVar(&u.specs, "lock-spec", nil, "a row of your own: a TOML file of Lua scripts (repeatable)")
	fs.StringArrayVar(&u.cmds, "lock-cmd", nil, "a row of your own: a lock process, named cmd1, cmd2, ... (repeatable)")
}

// registry returns the built-in locks with the user's registered beside
// them, and the user's lock names.
func (u *userLockFlags) registry() (*lockimpl.Registry, []string, error) {
	reg := lockimpl.Builtin()
	var names []string
	for _, path := range u.specs {
		spec, err := lockimpl.LoadSpec(path)
		if err != nil {
			return nil, nil, err
		}
		reg.Register(lockimpl.Entry{Name: spec.Name, Description: "spec " + path, Factory: spec.Factory})
		names = append(names, spec.Name)
	}
	for i, cmd := range u.cmds {
		name := fmt.Sprintf("cmd%d", i+1)
		reg.Register(lockimpl.ProcessEntry(name, cmd, "")) // the cell's topology
		names = append(names, name)
	}
	return reg, names, nil
}
