package checker

import (
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Stall is a lease never released (no release op names its token: the
// client skipped its unlock, or crashed holding it) and how long its key
// was seen unavailable after its holder was done with it.
type Stall struct {
	Key   string
	Token string
	// From is when the holder was done: the return of its last write, or
	// of its acquire if it wrote nothing.
	From int64
	// To is the return of the last acquire of the key by another lease
	// refused after From and before the key's next acquisition: the key
	// was seen unavailable until then. -1 if no one was refused (no one
	// wanted the key before it was free again, or before the run ended).
	// The time from the last refusal to the next grant is not counted: a
	// client may have stopped asking (its retries ran out, or every client
	// was queued on another key), and the key may have been free long
	// before anyone asked again.
	To int64
}

// Abandoned returns the history's abandoned leases, in order of From. A
// correct lock keeps each key unavailable for at most what is left of the
// lease's TTL: the liveness cost of a forgotten unlock.
func Abandoned(ops []history.Op) []Stall {
	type lease struct {
		key      string
		from     int64
		released bool
	}
	leases := map[string]*lease{}
	var order []string
	acquires := map[string][]*history.Op{} // ok and refused acquires per key
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire || op.Token == "" || op.Type == history.Info {
			continue
		}
		if op.Type == history.OK {
			if _, ok := leases[op.Token]; !ok {
				leases[op.Token] = &lease{key: op.Key, from: op.Return}
				order = append(order, op.Token)
			}
		}
		acquires[op.Key] = append(acquires[op.Key], op)
	}
	for i := range ops {
		op := &ops[i]
		l := leases[op.Token]
		if l == nil || op.Token == "" {
			continue
		}
		switch op.F {
		case history.Release:
			l.released = true
		case history.Write:
			l.from = max(l.from, op.Return)
		}
	}
	for _, as := range acquires {
		slices.SortFunc(as, func(a, b *history.Op) int { return cmpInt(a.Call, b.Call) })
	}
	var out []Stall
	for _, tok := range order {
		l := leases[tok]
		if l.released {
			continue
		}
		s := Stall{Key: l.key, Token: tok, From: l.from, To: -1}
		as := acquires[l.key]
		i, _ := slices.BinarySearchFunc(as, l.from, func(a *history.Op, t int64) int { return cmpInt(a.Call, t) })
		for ; i < len(as) && (as[i].Type != history.OK || as[i].Token == tok); i++ {
			if as[i].Type == history.Fail && as[i].Token != tok {
				s.To = max(s.To, as[i].Return)
			}
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Stall) int { return cmpInt(a.From, b.From) })
	return out
}

// GrantedWhileDown returns the ok acquires that were called after a
// fault of the named kind had taken its nodes down and returned before it
// brought them back (from the start op's return to the stop op's call),
// as indexes into ops. On a topology where those nodes are all the lock
// has (a single node), no correct lock grants one: a lock that does fails
// open, taking Redis's error for a yes.
func GrantedWhileDown(ops []history.Op, fault string) []int {
	type span struct{ from, to int64 }
	var down []span
	open := map[string]int64{}
	for i := range ops {
		op := &ops[i]
		if op.F != history.Nemesis || op.Value == nil || op.Value.Fault != fault || op.Error != "" {
			continue
		}
		id := strings.Join(op.Value.Targets, ",")
		switch op.Value.Phase {
		case "start":
			open[id] = op.Return
		case "stop":
			if from, ok := open[id]; ok && op.Call > from {
				down = append(down, span{from, op.Call})
			}
			delete(open, id)
		}
	}
	var out []int
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire || op.Type != history.OK {
			continue
		}
		for _, d := range down {
			if op.Call >= d.from && op.Return <= d.to {
				out = append(out, i)
				break
			}
		}
	}
	return out
}
