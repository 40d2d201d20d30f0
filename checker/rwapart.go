package checker

import (
	"cmp"
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// A read-write lock's readers meet nothing but writers: a read grant
// needs no write lease held, a write op's legality counts every lease,
// and a release or extend reads its own lease only. So a read lease
// whose whole life (from its acquire's call to the last instant it may
// be held or one of its ops take effect) meets no write op's interval
// and no instant a write lease may be held is judged alone: in every
// timeline its own ops admit, it is held only where no write op looks,
// and where it is granted no writer is held in any timeline of the rest.
// The key's timelines are then the products of its parts' (exact). A hot
// key whose readers keep writers out is mostly such leases (the
// contention scenario at --readers 0.5: 40 clients a key, 16,620 read
// grants to 3 write grants), which the model would otherwise carry at
// once, up to 40 in flight.

// readersApart splits one key's ops of a read-write lock into the rest
// and each read lease judged alone (readWrite's model on each part).
func readersApart(ops []*permitOp, eps int64) (rest []*permitOp, apart [][]*permitOp) {
	byToken := map[string][]*permitOp{}
	write := map[string]bool{}
	for _, o := range ops {
		if o.token == "" {
			continue
		}
		byToken[o.token] = append(byToken[o.token], o)
		if o.f == history.Acquire && o.write {
			write[o.token] = true
		}
	}
	var busy []span // write ops' intervals and write leases' possible lives
	for _, o := range ops {
		if o.f == history.Acquire && o.write && o.token == "" {
			busy = append(busy, span{o.call, o.ret})
		}
	}
	reader := map[string]span{}
	for tok, lease := range byToken {
		life, whole := leaseLife(lease, eps)
		switch {
		case write[tok]:
			busy = append(busy, life)
		case whole:
			reader[tok] = life
		}
	}
	slices.SortFunc(busy, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	// reach[i]: the latest end among busy[:i+1], for a search by start.
	reach := make([]int64, len(busy))
	for i, b := range busy {
		reach[i] = b.to
		if i > 0 {
			reach[i] = max(reach[i], reach[i-1])
		}
	}
	meets := func(l span) bool {
		// The busy spans starting by l.to; of them, one reaching l.from.
		i, _ := slices.BinarySearchFunc(busy, l.to+1, func(b span, t int64) int { return cmp.Compare(b.from, t) })
		return i > 0 && reach[i-1] >= l.from
	}
	alone := map[string]bool{}
	for tok, life := range reader {
		alone[tok] = !meets(life)
	}
	seen := map[string]bool{}
	for _, o := range ops {
		if !alone[o.token] {
			rest = append(rest, o)
			continue
		}
		if !seen[o.token] {
			seen[o.token] = true
			apart = append(apart, byToken[o.token])
		}
	}
	return rest, apart
}

// leaseLife is the span one token's ops may reach: from the earliest
// call to the last instant the lease may be held or one of its ops take
// effect. whole is false where that cannot be bounded so, or the token
// has no acquire that may have granted it, or two: such a lease stays
// with the rest.
func leaseLife(lease []*permitOp, eps int64) (life span, whole bool) {
	life = span{history.MaxTime, 0}
	expiry, released := int64(0), int64(history.MaxTime)
	grants, additive := 0, false
	for _, o := range lease {
		life.from, life.to = min(life.from, o.call), max(life.to, o.ret)
		switch {
		case o.f == history.Acquire && o.typ != history.Fail:
			grants++
			expiry = max(expiry, o.ret+o.ttl+eps)
		case o.f == history.Extend && o.typ != history.Fail:
			additive = additive || o.add
			expiry = max(expiry, o.ret+o.ttl+eps)
		case o.f == history.Release && o.typ == history.OK:
			// An ok release took effect by its return, after the grant
			// (it needs the lease held), and the one lease is not held
			// after it. A refused one bounds nothing: it may take effect
			// before the grant.
			released = min(released, o.ret)
		}
	}
	switch {
	case additive:
		return span{life.from, history.MaxTime}, false
	case grants != 1:
		return span{life.from, max(life.to, expiry)}, false
	}
	return span{life.from, max(life.to, min(expiry, released))}, true
}
