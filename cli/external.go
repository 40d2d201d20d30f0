package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/cluster"
)

// externalOpts are the flags of --backend external, shared by run,
// verify, bench and matrix.
type externalOpts struct {
	e            cluster.ExternalConfig
	passwordFile string
}

// PasswordEnv holds the external Redis's password (never a flag: argv is
// visible to every user of the machine, and run.json records the args).
const PasswordEnv = "LOCKCHECK_REDIS_PASSWORD"

// SentinelPasswordEnv holds the sentinels' password, if they want one.
const SentinelPasswordEnv = "LOCKCHECK_SENTINEL_PASSWORD"

func externalFlags(fs *flag.FlagSet, o *externalOpts) {
	fs.StringSliceVar(&o.e.Addrs, "redis", nil, "--backend external: HOST:PORT of the Redis to test (several: Redlock's masters)")
	fs.StringSliceVar(&o.e.Sentinels, "sentinel", nil, "--backend external: HOST:PORT of its sentinels (with --master-name)")
	fs.StringVar(&o.e.MasterName, "master-name", "", "--backend external: the master name the sentinels monitor")
	fs.StringSliceVar(&o.e.ClusterAddrs, "cluster", nil, "--backend external: HOST:PORT of Redis Cluster nodes to start from")
	fs.StringVar(&o.e.User, "redis-user", "", "--backend external: ACL user (default: the default user); the password comes from $"+PasswordEnv+" or --redis-password-file")
	fs.StringVar(&o.passwordFile, "redis-password-file", "", "--backend external: file whose first line is the password")
	fs.BoolVar(&o.e.TLS.Enabled, "tls", false, "--backend external: connect over TLS")
	fs.StringVar(&o.e.TLS.CA, "tls-ca", "", "--backend external: PEM file of the CA that signed the servers' certificates (default: the system's)")
	fs.StringVar(&o.e.TLS.Cert, "tls-cert", "", "--backend external: client certificate (PEM), with --tls-key")
	fs.StringVar(&o.e.TLS.Key, "tls-key", "", "--backend external: the client certificate's key (PEM)")
	fs.StringVar(&o.e.TLS.ServerName, "tls-server-name", "", "--backend external: the name the servers' certificates must hold (default: the host dialed)")
	fs.BoolVar(&o.e.TLS.Insecure, "tls-insecure", false, "--backend external: do not verify the servers' certificates")
	fs.StringVar(&o.e.KeyPrefix, "key-prefix", "", "--backend external: every key the run touches starts with this (default lockcheck:<run id>-<random>:); it must hold no key yet, and the run deletes what is under it at its end")
	fs.BoolVar(&o.e.ReusePrefix, "key-prefix-reuse", false, "--backend external: --key-prefix may already hold keys; they are left alone, and only the keys the run creates are deleted")
}

// config returns the external Redis's settings, with the passwords read
// from where they are kept; backend is the --backend given.
func (o *externalOpts) config(fs *flag.FlagSet, backend string) (cluster.ExternalConfig, error) {
	e := o.e
	if backend != cluster.External {
		for _, name := range []string{"redis", "sentinel", "master-name", "cluster", "redis-user", "redis-password-file",
			"tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name", "tls-insecure", "key-prefix", "key-prefix-reuse"} {
			if fs.Lookup(name) != nil && fs.Changed(name) {
				return e, usageError{fmt.Errorf("--%s is for a Redis lockcheck does not run: add --backend external", name)}
			}
		}
		return e, nil
	}
	e.Password, e.SentinelPassword = os.Getenv(PasswordEnv), os.Getenv(SentinelPasswordEnv)
	if o.passwordFile != "" {
		b, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return e, usageError{fmt.Errorf("--redis-password-file: %w", err)}
		}
		e.Password, _, _ = strings.Cut(string(b), "\n")
		e.Password = strings.TrimSuffix(e.Password, "\r")
		if e.Password == "" {
			return e, usageError{errors.New("--redis-password-file: its first line is empty")}
		}
	}
	return e, nil
}
