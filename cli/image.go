package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/version"
)

// imageCmd is lockcheck image: a container image of this lockcheck, built
// from local files, for agents in containers and pods.
func imageCmd(_ context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	tag := fs.String("tag", cluster.LockcheckImageRepo+":"+version.Version, "the image's tag (docker tag and push it where your cluster pulls from)")
	if done, code, err := parseNoArgs(fs, args); done {
		return code, err
	}
	bin, err := os.Executable()
	if err != nil {
		return exitFailed, fmt.Errorf("image: this binary: %w", err)
	}
	built, err := cluster.BuildLockcheckImage(*tag, bin)
	if err != nil {
		if errors.Is(err, cluster.ErrNotInstalled) {
			return exitUsage, err
		}
		return exitFailed, err
	}
	fmt.Println(built)
	fmt.Fprintf(os.Stderr, "lockcheck image: built %s from %s (FROM scratch, with tar and redis-server if present): docker tag and push it, then lockcheck k8s --agent-image\n", built, bin)
	return exitValid, nil
}
