package nemesis

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster"
)

// TestPickNodes: each --nemesis-targets value picks its share of five
// redlock masters, every one distinct.
func TestPickNodes(t *testing.T) {
	c := &cluster.Cluster{Topology: cluster.Redlock}
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: n})
	}
	for targets, want := range map[string]int{"": 1, TargetOne: 1, TargetMinority: 2, TargetMajority: 3, TargetPrimaries: 5, TargetAll: 5} {
		ns, err := pickNodes(context.Background(), Env{Cluster: c, Targets: targets}, rand.New(rand.NewPCG(1, 2)))
		seen := map[*cluster.Node]bool{}
		for _, n := range ns {
			seen[n] = true
		}
		if err != nil || len(ns) != want || len(seen) != want {
			t.Errorf("targets %q: %d nodes (%d distinct), %v; want %d", targets, len(ns), len(seen), err, want)
		}
	}
	if _, err := pickNodes(context.Background(), Env{Cluster: c, Targets: "half"}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("targets half: no error")
	}
}

// TestCompose: a+b needs what either needs, fits the topologies both fit,
// and refuses a name twice, an empty name and topologies that cannot meet.
func TestCompose(t *testing.T) {
	k, err := Lookup("failover+crash-client+lost-reply")
	if err != nil {
		t.Fatal(err)
	}
	if !k.Redis || !k.CrashesClients || !k.Clients || !k.ClientProxies || strings.Join(k.Topologies, ",") != "sentinel,cluster" {
		t.Errorf("composite kind %+v: want Redis, CrashesClients, Clients, ClientProxies, topologies sentinel,cluster", k)
	}
	if k, err := Lookup("reshard+failover"); err != nil || strings.Join(k.Topologies, ",") != "cluster" {
		t.Errorf("reshard+failover: %v, %v; want topology cluster", k.Topologies, err)
	}
	for name, want := range map[string]string{"kill-redis+kill-redis": "twice", "kill-redis+": "joined by one", "reshard+clock-quorum": "no topology fits",
		"kill-redis+meteor": `unknown fault "meteor"`} {
		if _, err := Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, want)
		}
	}
}

// observed is a fault that observed events.
type observed struct{ ev map[string]int64 }

func (observed) Start(context.Context, *rand.Rand) ([]string, error) { return nil, nil }
func (observed) Stop(context.Context) error                          { return nil }
func (o observed) Events() map[string]int64                          { return o.ev }

// TestCompose_EventsSummed: a composite's events are its parts', summed,
// so that a tallied client fault composed with another keeps its figure
// (pool+pause-client showed renewal_pool_wait 0 before); parts that
// observe nothing add nothing.
func TestCompose_EventsSummed(t *testing.T) {
	c := &composite{parts: []Fault{observed{map[string]int64{"a": 2, "b": 1}}, &composite{}, observed{map[string]int64{"a": 3}}}}
	got := c.Events()
	if got["a"] != 5 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("composite events %v, want a=5 b=1", got)
	}
	if ev := (&composite{parts: []Fault{&composite{}}}).Events(); ev != nil {
		t.Errorf("a composite of parts observing nothing: %v, want none", ev)
	}
}
