package process

import "github.com/lockcheck/lockcheck/lockimpl"

// FromSpec builds the lock of --lock-spec path: the one constructor of
// every command's (and every test's) spec locks.
func FromSpec(path string) (lockimpl.Entry, error) {
	spec, err := lockimpl.LoadSpec(path)
	if err != nil {
		return lockimpl.Entry{}, err
	}
	return lockimpl.SpecEntry(spec), nil
}

// FromCmd builds the lock of --lock-cmd cmdline named name: one process,
// or one per client (--lock-cmd-per-client); on topology, or ("") the
// run's.
func FromCmd(name, cmdline, topology string, perClient bool) lockimpl.Entry {
	if perClient {
		return PerClientEntry(name, cmdline, topology)
	}
	return Entry(name, cmdline, topology)
}
