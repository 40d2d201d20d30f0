package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/lockcheck/lockcheck/cluster"
)

func cleanupCmd(args []string) (int, error) {
	if len(args) > 0 {
		return exitUsage, usageError{fmt.Errorf("cleanup takes no arguments")}
	}
	removed, err := cluster.Leftovers()
	dockerRemoved, derr := cluster.DockerLeftovers()
	removed, err = append(removed, dockerRemoved...), errors.Join(err, derr)
	for _, d := range removed {
		fmt.Println("removed", d)
	}
	if err != nil {
		return exitFailed, err
	}
	if len(removed) == 0 {
		fmt.Println("nothing left behind")
	}
	return exitValid, nil
}

// sweepLeftovers removes what runs killed hard left behind, saying so in
// one line.
func sweepLeftovers() {
	if removed, _ := cluster.Leftovers(); len(removed) > 0 {
		fmt.Fprintf(os.Stderr, "lockcheck: removed %d temp dir(s) left by runs that were killed\n", len(removed))
	}
	if removed, _ := cluster.DockerLeftovers(); len(removed) > 0 {
		fmt.Fprintf(os.Stderr, "lockcheck: removed %d container(s) and network(s) left by runs that were killed\n", len(removed))
	}
}
