package cluster

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
)

var rpsRE = regexp.MustCompile(`([0-9.]+) requests per second`)

// Benchmark runs redis-benchmark against node n with clients connections
// and requests requests of cmd (its __rand_int__ placeholders drawn from a
// million keys), and returns its requests per second: the physical limit
// lockcheck's own rate is compared with.
func Benchmark(ctx context.Context, n *Node, password string, clients, requests int, cmd ...string) (float64, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, fmt.Errorf("%w: redis-benchmark not found: install it with `sudo apt-get install redis-tools` (or `make deps`)", ErrNotInstalled)
	}
	host, port, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return 0, err
	}
	args := append([]string{"-h", host, "-p", port, "-a", password, "-c", strconv.Itoa(clients),
		"-n", strconv.Itoa(requests), "-r", "1000000", "-q"}, cmd...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	m := rpsRE.FindAllSubmatch(out, -1)
	if m == nil {
		return 0, fmt.Errorf("redis-benchmark: no rate in its output %q", out)
	}
	return strconv.ParseFloat(string(m[len(m)-1][1]), 64)
}
