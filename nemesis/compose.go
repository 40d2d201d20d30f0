package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// compose is the Kind of faults joined by "+" (kill-redis+pause-client):
// they start together, in the order named, and stop together, in reverse.
// It needs what any of them needs, and fits the topologies all of them
// fit.
func compose(name string) (Kind, error) {
	parts := strings.Split(name, "+")
	k := Kind{Name: name}
	kinds := make([]Kind, len(parts))
	limited := false // k.Topologies is set
	for i, p := range parts {
		if p == "" || strings.Contains(p, "+") {
			return Kind{}, fmt.Errorf("fault %q: want names joined by one \"+\" each", name)
		}
		if slices.Contains(parts[:i], p) {
			return Kind{}, fmt.Errorf("fault %q names %s twice", name, p)
		}
		pk, err := Lookup(p)
		if err != nil {
			return Kind{}, err
		}
		kinds[i] = pk
		k.Needs = k.Needs.Merge(pk.Needs)
		switch {
		case len(pk.Topologies) == 0:
		case !limited:
			k.Topologies, limited = slices.Clone(pk.Topologies), true
		default:
			k.Topologies = slices.DeleteFunc(k.Topologies, func(t string) bool { return !slices.Contains(pk.Topologies, t) })
			if len(k.Topologies) == 0 {
				return Kind{}, fmt.Errorf("fault %q: no topology fits all of %s", name, strings.Join(parts, ", "))
			}
		}
	}
	var descs []string
	for _, pk := range kinds {
		descs = append(descs, pk.Name)
	}
	k.Description = "together: " + strings.Join(descs, ", ")
	k.New = func(e Env) (Fault, error) {
		c := &composite{}
		for _, pk := range kinds {
			f, err := pk.New(e)
			if err != nil {
				return nil, err
			}
			c.parts = append(c.parts, f)
		}
		return c, nil
	}
	return k, nil
}

// composite is faults on together.
type composite struct{ parts []Fault }

func (c *composite) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	var names []string
	var errs []error
	for _, f := range c.parts {
		ns, err := f.Start(ctx, rng)
		names = append(names, ns...)
		errs = append(errs, err)
	}
	return names, errors.Join(errs...)
}

func (c *composite) Stop(ctx context.Context) error {
	var errs []error
	for i := len(c.parts) - 1; i >= 0; i-- {
		errs = append(errs, c.parts[i].Stop(ctx))
	}
	return errors.Join(errs...)
}

// Events is what its parts observed in the window, summed: a tallied
// client fault (cancel, starve, pool) composed with another still shows
// its figure.
func (c *composite) Events() map[string]int64 {
	var out map[string]int64
	for _, f := range c.parts {
		o, ok := f.(Observer)
		if !ok {
			continue
		}
		for k, v := range o.Events() {
			if out == nil {
				out = map[string]int64{}
			}
			out[k] += v
		}
	}
	return out
}

// Hold: a composite stays on as long as its longest part, when each of
// them decides (-1 otherwise: for the window).
func (c *composite) Hold() time.Duration {
	var d time.Duration
	for _, f := range c.parts {
		l, ok := f.(Lasting)
		if !ok {
			return -1
		}
		d = max(d, l.Hold())
	}
	return d
}
