package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/kube"
)

// k8sCmd is lockcheck k8s: the manifests of a run whose agents are pods.
func k8sCmd(_ context.Context, args []string) (int, error) {
	var o runOpts
	fs := runFlags(&o)
	fs.Init("k8s", flag.ContinueOnError)
	var k kube.Options
	fs.StringVar(&k.Image, "agent-image", "", "the image holding lockcheck (lockcheck image builds one; push it where the cluster pulls from)")
	fs.StringVar(&k.Namespace, "namespace", "", "the namespace of every object (default: kubectl's)")
	fs.IntVar(&k.Port, "port", 7170, "the coordinator's port for its agents")
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	switch {
	case o.agents.Agents < 1:
		return exitUsage, usageError{errors.New("k8s: --agents N is required (the agent pods)")}
	case k.Image == "":
		return exitUsage, usageError{errors.New("k8s: --agent-image is required: build one with lockcheck image and push it to a registry the cluster pulls from")}
	case o.backend != cluster.External:
		return exitUsage, usageError{errors.New("k8s: pods reach Redis over the network: give --backend external with --redis, --sentinel or --cluster (a Redis the pods reach)")}
	}
	k.Linger = time.Hour.String()
	if fs.Changed("linger") {
		k.Linger = o.linger.String()
	}
	k.Name, k.Agents = harness.SafeName(strings.ToLower(cmp.Or(o.name, o.lock))), o.agents.Agents
	token, err := agentToken(o.agents.tokenFile)
	if err != nil {
		return exitUsage, err
	}
	if token == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
		fmt.Fprintf(os.Stderr, "lockcheck k8s: no %s: the Secret holds a random token\n", agentTokenEnv)
	}
	k.Token, k.RedisPassword = token, os.Getenv(PasswordEnv)
	k.RunArgs = dropFlags(fs, args, "agents", "listen", "out", "agent-token-file", "agent-image", "namespace", "port", "linger", "quiet", "redis-password-file")
	y, err := k.YAML()
	if err != nil {
		return exitFailed, err
	}
	os.Stdout.Write(y)
	ns := ""
	if k.Namespace != "" {
		ns = " -n " + k.Namespace
	}
	fmt.Fprintf(os.Stderr, `lockcheck k8s: apply with: lockcheck k8s ... | kubectl apply%[1]s -f -   (the Secret holds the token: keep the output out of files)
  follow:   kubectl logs%[1]s -f job/%[2]s
  results:  kubectl cp%[1]s $(kubectl get pod%[1]s -l job-name=%[2]s -o name | cut -d/ -f2):/results ./results   (within --linger %[3]s of the end)
  clean up: kubectl delete%[1]s job,service,secret -l lockcheck.run=%[4]s
`, ns, k.CoordinatorJob(), k.Linger, k.Name)
	return exitValid, nil
}

// dropFlags returns args without the named flags (and their values).
func dropFlags(fs *flag.FlagSet, args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		f := fs.Lookup(name)
		if f == nil && len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f == nil || !slices.Contains(names, f.Name) {
			out = append(out, a)
			continue
		}
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++ // its value
		}
	}
	return out
}
