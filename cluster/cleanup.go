package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TempPrefix starts the name of every node's temp dir.
const TempPrefix = "lockcheck-"

// ownerFile, in a node's temp dir, holds the pid of the lockcheck that
// made it.
const ownerFile = "lockcheck.pid"

// Leftovers removes the temp dirs of nodes whose lockcheck died hard
// (SIGKILL): Redis died with it (Pdeathsig), its dir did not. Only a dir
// with an owner file naming a dead lockcheck is removed: one without is
// not a node's (or not yet: its owner file is written a moment after the
// dir is made), and a dir someone else named lockcheck-* is never
// touched. A dir is also kept while any process has it as working
// directory (a node runs there), and for its first minute. It returns the
// dirs it removed.
func Leftovers() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), TempPrefix+"*"))
	if err != nil || len(dirs) == 0 {
		return nil, err
	}
	inUse := map[string]bool{}
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		if d, err := os.Readlink(c); err == nil {
			inUse[d] = true
		}
	}
	var removed []string
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() || inUse[d] || time.Since(st.ModTime()) < time.Minute || !ownerDead(d) {
			continue
		}
		if err := os.RemoveAll(d); err == nil {
			removed = append(removed, d)
		}
	}
	return removed, nil
}

// ownerDead reports whether dir has an owner file naming a lockcheck that
// no longer runs.
func ownerDead(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && !pidAlive(pid)
}

// pidAlive reports whether process pid exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
