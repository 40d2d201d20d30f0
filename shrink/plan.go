// Package shrink reduces a broken run to the smallest plan that still
// breaks the lock with the same finding: delta debugging over the run's
// clients, windows, keys and length (Zeller's ddmin, as STS and DEMi ran
// it over real, non-deterministic processes), each candidate re-run
// until it breaks or its runs are spent.
package shrink

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Plan is a run as data: the command line it came from, and the
// dimensions a shrink cuts, which override that command's. Each client
// is named by its random stream and each window by its ID, both derived
// from Seed and the index in the original run, so that dropping one
// leaves every other as it was (workload.Config.Streams,
// nemesis.Config.Windows).
type Plan struct {
	// Args is the run's command line (lockcheck run ...), seed included.
	Args []string `json:"args"`
	Seed int64    `json:"seed"`
	// Clients are the clients' streams, one a client.
	Clients []int `json:"clients"`
	Keys    int   `json:"keys"`
	// Duration is the run's length.
	Duration time.Duration `json:"-"`
	// Windows are the fault windows, in the order they start.
	Windows []nemesis.Window `json:"windows"`
	// Command runs the plan, and Shrunk says what shrink made of it: in
	// the file a shrink writes, not part of the plan (Key).
	Command string  `json:"command,omitempty"`
	Shrunk  *Shrunk `json:"shrunk,omitempty"`
}

// Shrunk is a shrunk plan's account: the finding it keeps, how often it
// broke with it, the size it came from.
type Shrunk struct {
	Finding    Finding `json:"finding"`
	Reproduced int     `json:"reproduced"`
	Measured   int     `json:"measured"`
	From       string  `json:"from"`
}

// MarshalJSON writes p with its duration as text ("3s").
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	return json.Marshal(struct {
		plain
		Duration string `json:"duration"`
	}{plain(p), p.Duration.String()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Plan) UnmarshalJSON(b []byte) error {
	type plain Plan
	var j struct {
		plain
		Duration string `json:"duration"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d, err := time.ParseDuration(j.Duration)
	if err != nil {
		return fmt.Errorf("plan duration %q: %v", j.Duration, err)
	}
	*p = Plan(j.plain)
	p.Duration = d
	return nil
}

// Size is how large a plan is, in the dimensions a shrink cuts.
type Size struct {
	Clients  int
	Keys     int
	Windows  int
	Duration time.Duration
	// Faulted is the windows' lengths, summed.
	Faulted time.Duration
}

// String is the size as the summary line gives it.
func (s Size) String() string {
	return fmt.Sprintf("%d clients, %d keys, %d windows (%v of faults), %v", s.Clients, s.Keys, s.Windows, s.Faulted, s.Duration)
}

// Size is p's size.
func (p Plan) Size() Size {
	var faulted time.Duration
	for _, w := range p.Windows {
		faulted += w.Length
	}
	return Size{Clients: len(p.Clients), Keys: p.Keys, Windows: len(p.Windows), Duration: p.Duration, Faulted: faulted}
}

// Clone is a copy of p that shares no slice with it.
func (p Plan) Clone() Plan {
	p.Args = slices.Clone(p.Args)
	p.Clients = slices.Clone(p.Clients)
	if p.Windows != nil {
		p.Windows = slices.Clone(p.Windows)
	}
	return p
}

// WithoutClients is p without the clients at the given indexes; the
// others keep their streams.
func (p Plan) WithoutClients(drop ...int) Plan {
	q := p.Clone()
	q.Clients = without(p.Clients, drop)
	return q
}

// WithoutWindows is p without the windows at the given indexes; the
// others keep their IDs, starts and lengths.
func (p Plan) WithoutWindows(drop ...int) Plan {
	q := p.Clone()
	q.Windows = without(p.Windows, drop)
	if q.Windows == nil {
		q.Windows = []nemesis.Window{}
	}
	return q
}

// without is xs less the elements at the indexes drop.
func without[T any](xs []T, drop []int) []T {
	var out []T
	for i, x := range xs {
		if !slices.Contains(drop, i) {
			out = append(out, x)
		}
	}
	return out
}

// Key is p as a cache key: two plans that run alike have the same.
func (p Plan) Key() string {
	p.Command, p.Shrunk = "", nil
	b, _ := json.Marshal(p)
	return string(b)
}

// Apply makes w and n run p: its seed, clients, keys, length and
// windows over what the command line set.
func (p Plan) Apply(w *workload.Config, n *nemesis.Config) {
	w.Seed, w.Clients, w.Streams, w.Keys, w.Duration, w.Ops = p.Seed, len(p.Clients), slices.Clone(p.Clients), p.Keys, p.Duration, 0
	n.Seed = p.Seed
	n.Windows = slices.Clone(p.Windows)
	if n.Windows == nil {
		n.Windows = []nemesis.Window{}
	}
}

// From is the plan of a run of w and n (through their WithDefaults):
// every client, every key, and the windows its seed schedules within its
// duration.
func From(args []string, w workload.Config, n nemesis.Config) Plan {
	p := Plan{Args: slices.Clone(args), Seed: w.Seed, Keys: w.Keys, Duration: w.Duration, Windows: []nemesis.Window{}}
	for i := range w.Clients {
		p.Clients = append(p.Clients, i)
		if i < len(w.Streams) {
			p.Clients[i] = w.Streams[i]
		}
	}
	if len(n.Faults) > 0 {
		n.Seed = cmp.Or(n.Seed, w.Seed)
		p.Windows = append(p.Windows, nemesis.Schedule(n, w.Duration)...)
	}
	return p
}

// Load reads a plan file.
func Load(path string) (Plan, error) {
	var p Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%s: %v", path, err)
	}
	if len(p.Args) < 2 || p.Args[1] != "run" || len(p.Clients) == 0 || p.Keys < 1 || p.Duration <= 0 {
		return p, fmt.Errorf("%s: not a plan (want args of lockcheck run, at least one client and key, and a duration)", path)
	}
	return p, nil
}
