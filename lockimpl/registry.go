package lockimpl

import (
	"fmt"
	"sort"
	"strings"
)

// Factory builds a Locker for one run.
type Factory func(env Env) (Locker, error)

// Entry is one registered lock.
type Entry struct {
	Name        string
	Description string
	// Broken marks the classic mistakes that exist to prove the checkers.
	Broken bool
	// Topology is the one the lock needs ("": any single-master one).
	Topology string
	Factory  Factory
}

// Registry maps lock names to factories. The zero value is empty and ready.
type Registry struct {
	m map[string]Entry
}

// Register adds or replaces a lock.
func (r *Registry) Register(e Entry) {
	if r.m == nil {
		r.m = map[string]Entry{}
	}
	r.m[e.Name] = e
}

// Lookup returns the named lock.
func (r *Registry) Lookup(name string) (Entry, error) {
	e, ok := r.m[name]
	if !ok {
		return Entry{}, fmt.Errorf("unknown lock %q (known: %s; see lockcheck list)", name, strings.Join(r.Names(), ", "))
	}
	return e, nil
}

// Entries returns every lock, correct ones first, each group by name.
func (r *Registry) Entries() []Entry {
	es := make([]Entry, 0, len(r.m))
	for _, e := range r.m {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Broken != es[j].Broken {
			return !es[i].Broken
		}
		return es[i].Name < es[j].Name
	})
	return es
}

// Names returns the lock names in Entries order.
func (r *Registry) Names() []string {
	var ns []string
	for _, e := range r.Entries() {
		ns = append(ns, e.Name)
	}
	return ns
}

// Builtin returns a new registry with every lock of this package.
func Builtin() *Registry {
	r := &Registry{}
	r.Register(Entry{Name: "setnx", Factory: NewSetNX,
		Description: "SET key token NX PX ttl; Lua compare-and-delete release, compare-and-PEXPIRE extend"})
	r.Register(Entry{Name: "watchdog", Factory: newSetNXWatchdog,
		Description: "setnx plus a background extend every TTL/3 until release; a failed extend marks the lease lost"})
	r.Register(Entry{Name: "fenced", Factory: NewFenced,
		Description: "setnx whose acquire also INCRs a per-key fencing counter, in one Lua script; the resource rejects stale tokens"})
	r.Register(Entry{Name: "setnx-wait", Factory: NewSetNXWait,
		Description: "setnx plus WAIT 1 after acquiring (sentinel topology): narrows, does not close, the failover window"})
	r.Register(Entry{Name: "redislock", Factory: NewRedislock,
		Description: "github.com/bsm/redislock v0.9 as it is: Obtain (Lua SET NX PX), Refresh (compare-and-PEXPIRE), Release (compare-and-DEL)"})
	r.Register(Entry{Name: "redlock", Factory: NewRedlock, Topology: "redlock",
		Description: "Redlock over N masters (topology redlock): SET NX PX on all in parallel, majority and validity = TTL - elapsed - drift; release and extend on all"})
	r.Register(Entry{Name: "redsync", Factory: NewRedsync, Topology: "redlock",
		Description: "github.com/go-redsync/redsync/v4 as it is (topology redlock): its Redlock, one try per acquire"})
	for _, b := range brokenLocks {
		r.Register(b)
	}
	return r
}
