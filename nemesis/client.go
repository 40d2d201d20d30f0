package nemesis

import "strconv"

// clientsPerFault is how many clients one pause-client or crash-client
// start acts on.
const clientsPerFault = 3

// procs names clients as targets: p3, p17.
func procs(ids []int) []string {
	var ts []string
	for _, id := range ids {
		ts = append(ts, "p"+strconv.Itoa(id))
	}
	return ts
}
