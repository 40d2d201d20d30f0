package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSentinel_PasswordNotInArgv: no node or sentinel of a Sentinel set
// is started with the run's password in its arguments (ps shows them
// until Redis rewrites its title, and always inside /proc while it
// restarts): the nodes read it on stdin, the sentinels from a config file
// in a dir only their owner may enter.
func TestSentinel_PasswordNotInArgv(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("LOCKCHECK_REQUIRE_REDIS") == "" {
		t.Skip("redis-server not installed")
	}
	c, err := Up(context.Background(), Config{Topology: Sentinel, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	for _, n := range append(slices.Clone(c.Nodes), c.Sentinels...) {
		p := n.rt.(*process)
		if slices.ContainsFunc(p.args, func(a string) bool { return strings.Contains(a, c.Password) }) {
			t.Errorf("%s started with the password in its arguments: %q", n.Name, p.args)
		}
		if n.Name[0] == 'n' && !strings.Contains(p.stdin, "requirepass "+c.Password) {
			t.Errorf("%s does not read the password on stdin", n.Name)
		}
		// Sentinel rewrites its config (mode 0644): its dir keeps others out.
		if st, err := os.Stat(p.dir); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: dir %s %v, mode %v; want one only its owner may enter", n.Name, p.dir, err, st.Mode())
		}
		if _, err := os.Stat(filepath.Join(p.dir, "sentinel.conf")); n.Name[0] == 's' && err != nil {
			t.Errorf("%s: %v", n.Name, err)
		}
	}
}
