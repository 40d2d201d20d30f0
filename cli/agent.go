package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
)

// agentTokenEnv is where both sides read the shared agent token (or from
// the file a --token-file flag names): never from argv, which ps shows.
const agentTokenEnv = "LOCKCHECK_AGENT_TOKEN"

// agentToken reads the token from file, if named, else from the
// environment.
func agentToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usageError{fmt.Errorf("--token-file: %w", err)}
		}
		return strings.TrimSpace(string(b)), nil
	}
	return os.Getenv(agentTokenEnv), nil
}

// agentCmd is lockcheck agent: clients on this machine for a coordinator
// elsewhere.
func agentCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var cfg agent.Config
	var tokenFile string
	fs.StringVar(&cfg.Join, "join", "", "the coordinator's HOST:PORT (lockcheck run --agents N --listen ADDR)")
	fs.IntVar(&cfg.Index, "index", -1, "this agent's index in the run (default: $JOB_COMPLETION_INDEX on a Kubernetes Indexed Job, else the first free one)")
	fs.StringVar(&tokenFile, "token-file", "", "read the agent token from this file (default: $"+agentTokenEnv+")")
	fs.DurationVar(&cfg.JoinTimeout, "join-timeout", time.Minute, "how long to keep trying to reach the coordinator")
	var tlsOpts cluster.TLSOptions
	fs.BoolVar(&tlsOpts.Enabled, "tls", false, "reach the coordinator over TLS (its --agent-tls-cert)")
	fs.StringVar(&tlsOpts.CA, "tls-ca", "", "PEM file of the CA that signed the coordinator's certificate (default: the system's)")
	fs.StringVar(&tlsOpts.ServerName, "tls-server-name", "", "the name the coordinator's certificate must hold (default: the host of --join)")
	fs.BoolVar(&tlsOpts.Insecure, "tls-insecure", false, "do not verify the coordinator's certificate (the token still travels encrypted)")
	addrMap := fs.StringToString("redis-addr-map", nil, "ADDR=HOST:PORT,...: dial HOST:PORT for a Redis address the coordinator gives (a NAT, a published port); ADDR * maps every other address")
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	if cfg.Join == "" {
		return exitUsage, usageError{errors.New("agent: --join HOST:PORT is required (the coordinator's --listen address)")}
	}
	if i := os.Getenv("JOB_COMPLETION_INDEX"); i != "" && !fs.Changed("index") {
		n, err := strconv.Atoi(i)
		if err != nil {
			return exitUsage, usageError{fmt.Errorf("JOB_COMPLETION_INDEX %q: not a number", i)}
		}
		cfg.Index = n
	}
	tlsCfg, err := tlsOpts.Config()
	if err != nil {
		return exitUsage, usageError{err}
	}
	cfg.TLS = tlsCfg
	if len(*addrMap) > 0 {
		m := *addrMap
		cfg.DialAddr = func(addr string) string {
			if to, ok := m[addr]; ok {
				return to
			}
			return cmp.Or(m["*"], addr)
		}
	}
	if cfg.Token, err = agentToken(tokenFile); err != nil {
		return exitUsage, err
	}
	if cfg.Token == "" {
		return exitUsage, usageError{fmt.Errorf("agent: no token: set %s (the coordinator's), or --token-file", agentTokenEnv)}
	}
	if err := agentClockOff(&cfg); err != nil {
		return exitUsage, err
	}
	cfg.Log, cfg.Process = os.Stderr, true
	if err := agent.Run(ctx, cfg); err != nil {
		if errors.Is(err, harness.ErrConfig) {
			return exitUsage, err
		}
		return exitFailed, err
	}
	fmt.Fprintln(os.Stderr, "agent: the run is over; its verdict is the coordinator's")
	return exitValid, nil
}

// agentClockOff reads a clock run off on purpose, to see the coordinator's
// correction at work (a Go program reads its clock through the vDSO, out
// of reach of an LD_PRELOAD shim): LOCKCHECK_AGENT_SKEW (a duration) and
// LOCKCHECK_AGENT_DRIFT (ppm).
func agentClockOff(cfg *agent.Config) error {
	var err error
	if s := os.Getenv("LOCKCHECK_AGENT_SKEW"); s != "" {
		if cfg.Skew, err = time.ParseDuration(s); err != nil {
			return usageError{fmt.Errorf("LOCKCHECK_AGENT_SKEW %q: want a duration such as 300ms", s)}
		}
	}
	if s := os.Getenv("LOCKCHECK_AGENT_DRIFT"); s != "" {
		if cfg.Drift, err = strconv.ParseInt(s, 10, 64); err != nil {
			return usageError{fmt.Errorf("LOCKCHECK_AGENT_DRIFT %q: want parts per million, such as 200", s)}
		}
	}
	return nil
}
