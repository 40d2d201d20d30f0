package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenario"
)

func listCmd(args []string) (int, error) {
	if len(args) > 0 {
		return exitUsage, usageError{fmt.Errorf("list takes no arguments")}
	}
	return exitValid, list(os.Stdout, lockimpl.All())
}

// list writes the locks of reg, each with its kind and shape (mutex,
// semaphore, rwlock: what its runs are judged as, and which of --permits
// and --readers it takes), then the faults, scenarios and topologies.
func list(w io.Writer, reg *lockimpl.Registry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tKIND\tSHAPE\tWHAT")
	for _, e := range reg.All() {
		kind := "correct"
		if e.Broken {
			kind = "broken"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, kind, e.ShapeName(), e.Description)
	}
	fmt.Fprintln(tw, "\nFAULT\t\t\tWHAT")
	for _, k := range nemesis.All() {
		fmt.Fprintf(tw, "%s\t\t\t%s\n", k.Name, k.Description)
	}
	fmt.Fprintln(tw, "\nSCENARIO\tRUN BY\t\tWHAT")
	battery := scenario.Names(scenario.Battery())
	for _, s := range scenario.All() {
		var by []string
		if slices.Contains(battery, s.Name) {
			by = append(by, "verify")
		}
		if slices.Contains(scenario.MatrixColumns, s.Name) {
			by = append(by, "matrix")
		}
		fmt.Fprintf(tw, "%s\t%s\t\t%s\n", s.Name, cmp.Or(strings.Join(by, ","), "-"), s.Description)
	}
	fmt.Fprintln(tw, "\nTOPOLOGY\tBACKEND\t\t")
	fmt.Fprintln(tw, "single\tlocal\t\tone redis-server on 127.0.0.1")
	fmt.Fprintln(tw, "sentinel\tlocal\t\ta master, two replicas and three redis-sentinel processes; peers talk through toxiproxy")
	fmt.Fprintln(tw, "redlock\tlocal\t\t--nodes independent masters (5), for redlock and redsync")
	fmt.Fprintln(tw, "cluster\tlocal\t\tRedis Cluster: --nodes masters (3) with a replica each; nodes talk through toxiproxy; clients use the cluster client")
	fmt.Fprintln(tw, "(each)\tdocker\t\tthe same in containers on a network made for the run, ports published on 127.0.0.1 (--backend docker, --image)")
	return tw.Flush()
}
