// Package ownlock gives tests users' own locks by name, built by the
// CLI's constructors (process.FromSpec, process.FromCmd): the example
// specs and the example lock processes, which it builds once per test
// binary. Only external test packages (harness_test, battery_test) may
// import it: it imports harness.
package ownlock

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/lockimpl/process"
)

// Resolve resolves the test names of users' locks in cfg.Lock:
// "spec:NAME" is examples/specs/NAME.toml, "cmd:lockproc" the example
// lock process, "cmd:lockproc-watchdog" the same with its own watchdog,
// and a "/per-client" suffix runs one process per client. Other names
// are left as they are. The test runs one directory below the repo's
// root.
func Resolve(t testing.TB, cfg *harness.Config) {
	t.Helper()
	switch {
	case strings.HasPrefix(cfg.Lock, "spec:"):
		e, err := process.FromSpec("../examples/specs/" + strings.TrimPrefix(cfg.Lock, "spec:") + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Lock, cfg.Factory = e.Name, e.Factory
	case strings.HasPrefix(cfg.Lock, "cmd:lockproc"):
		name, perClient := strings.CutSuffix(strings.TrimPrefix(cfg.Lock, "cmd:"), "/per-client")
		cmdline := Lockproc(t)
		if name == "lockproc-watchdog" {
			cmdline += " -watchdog"
		}
		Process(cfg, name, cmdline, perClient)
	}
}

// Process makes cfg's lock a lock process, as --lock-cmd (and
// --lock-cmd-per-client) does. It runs on one node unless cfg asks for
// another topology (lockproc speaks single and sentinel).
func Process(cfg *harness.Config, name, cmdline string, perClient bool) {
	cfg.Lock, cfg.Registry = name, &lockimpl.Registry{}
	cfg.Registry.Register(process.FromCmd(name, cmdline, cmp.Or(cfg.Cluster.Topology, "single"), perClient))
}

// built are the example lock processes built so far, in one temp dir.
var built struct {
	mu    sync.Mutex
	dir   string
	paths map[string]string
}

// Lockproc builds examples/lockproc once per test binary and returns its
// path; Cleanup removes it.
func Lockproc(t testing.TB) string { return Example(t, "lockproc") }

// Example builds the example lock process examples/NAME once per test
// binary and returns its path; Cleanup removes it.
func Example(t testing.TB, name string) string {
	built.mu.Lock()
	defer built.mu.Unlock()
	if p, ok := built.paths[name]; ok {
		return p
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "lockproc-test-")
		if err != nil {
			t.Fatalf("build examples/%s: %v", name, err)
		}
		built.dir, built.paths = dir, map[string]string{}
	}
	p := filepath.Join(built.dir, name)
	if out, err := exec.Command("go", "build", "-o", p, "../examples/"+name).CombinedOutput(); err != nil {
		t.Fatalf("build examples/%s: %v: %s", name, err, out)
	}
	built.paths[name] = p
	return p
}

// Cleanup removes what Example built: a TestMain calls it after m.Run.
func Cleanup() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
