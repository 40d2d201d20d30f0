package harness

import (
	"fmt"
	"syscall"
)

// clientBytes is what one client costs lockcheck, at the least: its
// goroutine and its connection's buffers (go-redis: 32 KiB each way).
const clientBytes = 100 << 10

// fitsMachine refuses, before anything starts, a client count this
// machine cannot hold: each client keeps a connection open to every node
// it talks to (conns), which the open-file limit must allow with room
// for the rest, and its buffers, which half the RAM must.
func fitsMachine(clients, conns int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		// Go raises the soft limit to the hard one at start.
		if need := uint64(clients)*uint64(conns) + 512; need > lim.Max {
			return fmt.Errorf("--clients %d needs about %d open files (a connection per client per node), but the limit is %d: raise it (ulimit -n, as root) or run fewer clients", clients, need, lim.Max)
		}
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil {
		ram := uint64(si.Totalram) * uint64(si.Unit)
		if need := uint64(clients) * uint64(conns) * clientBytes; need > ram/2 {
			return fmt.Errorf("--clients %d needs about %d MB for its connections, over half this machine's %d MB: run fewer clients, or spread them over machines", clients, need>>20, ram>>20)
		}
	}
	return nil
}
