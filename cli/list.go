package cli

import (
	"cmp"
	"fmt"
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
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tKIND\tWHAT")
	for _, e := range lockimpl.All().All() {
		kind := "correct"
		if e.Broken {
			kind = "broken"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, kind, e.Description)
	}
	fmt.Fprintln(tw, "\nFAULT\t\tWHAT")
	for _, k := range nemesis.All() {
		fmt.Fprintf(tw, "%s\t\t%s\n", k.Name, k.Description)
	}
	fmt.Fprintln(tw, "\nSCENARIO\tRUN BY\tWHAT")
	battery := scenario.Names(scenario.Battery())
	for _, s := range scenario.All() {
		var by []string
		if slices.Contains(battery, s.Name) {
			by = append(by, "verify")
		}
		if slices.Contains(scenario.MatrixColumns, s.Name) {
			by = append(by, "matrix")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, cmp.Or(strings.Join(by, ","), "-"), s.Description)
	}
	fmt.Fprintln(tw, "\nTOPOLOGY\tBACKEND\t")
	fmt.Fprintln(tw, "single\tlocal\tone redis-server on 127.0.0.1")
	fmt.Fprintln(tw, "sentinel\tlocal\ta master, two replicas and three redis-sentinel processes; peers talk through toxiproxy")
	fmt.Fprintln(tw, "redlock\tlocal\t--nodes independent masters (5), for redlock and redsync")
	fmt.Fprintln(tw, "cluster\tlocal\tRedis Cluster: --nodes masters (3) with a replica each; nodes talk through toxiproxy; clients use the cluster client")
	fmt.Fprintln(tw, "(each)\tdocker\tthe same in containers on a network made for the run, ports published on 127.0.0.1 (--backend docker, --image)")
	return exitValid, tw.Flush()
}
