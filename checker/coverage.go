package checker

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Coverage is what a run exercised, read off its history: how many times
// each classic failure of a lock was given its chance (Antithesis calls
// these "sometimes" assertions). A valid verdict over a run whose figures
// are zero says only that nothing was tried.
//
// The figures are certain, not possible: a lease counts as expired at a
// moment only if it had surely expired then (its latest possible deadline,
// plus the clock tolerance, was past), as live only if it was surely live
// (acquired, not yet released, its earliest possible deadline less the
// clock tolerance still ahead), and a key as free only if no other lease
// could have been live on it. The lease is judged as a lease: a broken
// lock that lost it some other way is the checkers' business.
type Coverage map[string]int

// DeadlineFigures are the figures that count what a holder did after its
// lease's deadline: a lock whose leases are scopes (no deadline) can
// never give them.
var DeadlineFigures = []string{LateReleaseFree, LateReleaseTaken, LateExtendFree, LateExtendTaken}

// The coverage figures. A fault's figures are named by Hit and Windows.
const (
	// LateReleaseFree counts releases called after their lease had
	// expired, on a key no other lease could hold.
	LateReleaseFree = "late_release_free"
	// LateReleaseTaken counts releases called after their lease had
	// expired while another client held the key.
	LateReleaseTaken = "late_release_taken"
	// LateExtendFree and LateExtendTaken are the same for extends.
	LateExtendFree  = "late_extend_free"
	LateExtendTaken = "late_extend_taken"
	// StaleHolder counts leases whose holder was still in its critical
	// section after the lease had expired and after another client had
	// acquired the key (a paused client's write). Of a lock whose leases
	// are scopes (no deadline: Options.NotJudged), after another client
	// had acquired the key.
	StaleHolder = "stale_holder"
	// HeldPastTried counts leases whose holder was still in its
	// critical section (its first write returned) after the lease had
	// surely ended (its TTL and the clock tolerance after the acquire
	// returned) while another client called an acquire of the key after
	// that end and before the write returned: a paused holder that wrote
	// on past its lease while its key was tried, the chance a lock that
	// does not keep others out, or fence, a stopped holder gives. It
	// counts the chance, not the break: a lock that keeps the key (a
	// connection-held lock, a renewal that outlives the stop) refuses the
	// acquire and passes; one that lets it in shows a stale holder
	// (StaleHolder), a finding.
	HeldPastTried = "held_past_tried"
	// WindowAcquires counts the acquires called inside the windows of a
	// fault that stalls or drops replies (pause-redis, lost-reply), and
	// WindowInfo those of them that ended indeterminate: a lock whose
	// client waits every stall out (its own command timeout longer than
	// the stall), or that the fault does not reach, never ends one so,
	// and can then never raise InfoContended or InfoSettled. They are
	// the measure behind a stall scenario's n/a, not a requirement.
	WindowAcquires = "window_acquires"
	WindowInfo     = "window_info"
	// AbandonedTaken counts leases acquired (or maybe acquired: a client
	// that crashed in its acquire) and never released (no release, or one
	// that may not have happened: a crashed holder) whose key another
	// client acquired after they had surely expired.
	AbandonedTaken = "abandoned_taken"
	// AbandonedTried counts the same leases whose key another client
	// tried (an acquire called, whatever its outcome) after they had
	// surely expired: crash's chance. A lock whose crashed holder's key
	// never frees (no TTL) raises it and not AbandonedTaken.
	AbandonedTried = "abandoned_tried"
	// Contended counts acquires refused because the key was taken (failed
	// acquires): races between acquirers; and blocking acquires (wait_ms)
	// that took the key after a wait, called while another lease of it
	// was surely live (waitedOut: their first try was refused inside the
	// lock, which waited it out). A run adds the Redlock attempts
	// its clients counted as undone (too few nodes granted them), which the
	// history does not record.
	Contended = "contended"
	// InfoContended counts acquires that ended indeterminate (info) on a
	// key where an acquire was refused while they could still take
	// effect (from their call to their return plus the info horizon): a
	// stalled or lossy Redis on a contended key, where a lock that
	// resends or guesses an outcome breaks.
	InfoContended = "info_contended"
	// AllPermitsTried counts, on a semaphore's history (permits > 1),
	// acquires called while all k permits of their key were surely held
	// by other leases: the chance over-admission and a refusal with a
	// free permit both need. A mutex's history has no such figure.
	AllPermitsTried = "all_permits_tried"
	// CrashedFull counts, on a semaphore's history, leases whose holder
	// crashed (never released them) when last seen alive while all k
	// permits of their key were surely held, and whose key was tried
	// after they had surely expired: the chance a leaked permit needs.
	CrashedFull = "crashed_full"
	// WriterTriedOverReaders counts, on a read-write lock's history
	// (acquires that name their access), write acquires called while a
	// read lease of their key was surely held: the chance a writer that
	// ignores readers needs. ReaderTriedOverWriter counts read acquires
	// called while a write lease of their key was surely held: the
	// chance a reader that ignores the writer needs. A history of
	// another shape has neither.
	WriterTriedOverReaders = "writer_tried_over_readers"
	ReaderTriedOverWriter  = "reader_tried_over_writer"
	// InfoSettled counts acquires that ended indeterminate, called on a
	// key no lease surely held (so that they, or an indeterminate acquire
	// before them, may have won it), after which the key went quiet (no
	// other indeterminate acquire or extend on it) until the lease they could have set
	// had surely expired, and a client then tried the key: where a key
	// held on past that (a renewal no caller knows of) must show as a
	// stuck lock.
	InfoSettled = "info_settled"
)

// windowFigures are the figures read from the servers in fault windows.
var windowFigures = history.ServerEvents

// CoverageFigures names the figures and what each means, in the order
// they are shown.
var CoverageFigures = []struct{ Name, Meaning string }{
	{Contended, "acquires refused because another client held the key, and blocking acquires that waited for a key another lease surely held when they were called"},
	{InfoContended, "acquires that ended indeterminate on a key while acquires of it were refused"},
	{AllPermitsTried, "acquires of a semaphore's key called while all its permits were surely held (a semaphore's history only)"},
	{CrashedFull, "abandoned leases of a semaphore whose holder was last seen while all k permits of its key were surely held, the key tried after they expired (a semaphore's history only)"},
	{WriterTriedOverReaders, "write acquires of a read-write lock's key called while a reader surely held it (a read-write lock's history only)"},
	{ReaderTriedOverWriter, "read acquires of a read-write lock's key called while a writer surely held it (a read-write lock's history only)"},
	{InfoSettled, "acquires that ended indeterminate on a key no lease surely held, which then went quiet past their lease and was tried"},
	{LateReleaseFree, "releases called after their lease expired, on a free key"},
	{LateReleaseTaken, "releases called after their lease expired, while another client held the key"},
	{LateExtendFree, "extends called after their lease expired, on a free key"},
	{LateExtendTaken, "extends called after their lease expired, while another client held the key"},
	{WindowAcquires, "acquires called inside a pause-redis or lost-reply window"},
	{WindowInfo, "of those, the acquires that ended indeterminate"},
	{HeldPastTried, "holders still in their critical section past their lease's end while another client tried their key"},
	{StaleHolder, "holders still in their critical section after their lease expired and another client acquired"},
	{AbandonedTaken, "leases (maybe) acquired, never released (crashed holder), whose key another client acquired after expiry"},
	{AbandonedTried, "leases (maybe) acquired, never released (crashed holder), whose key another client tried after expiry"},
	{history.GrantedByDeposed, "keys a master cut off by a partition set after a replica was promoted in its place (read from that master)"},
	{history.GrantedBothSides, "keys the deposed master and the promoted one held at once (read from both): one lease granted on both sides"},
	{history.LostAtHeal, "leases a partition's deposed master held when the partition healed that the promoted master lacked (read from both): the heal drops them"},
	{history.ExpiredByClock, "leases a node's clock jump expired at once (read from the node before and after)"},
	{history.LostAtPromotion, "leases a master held just before it went down that the replica promoted in its place lacked (read from both)"},
	{history.LostRetaken, "leases lost at a promotion, a partition's heal or a restart without persistence whose key the promoted (restarted) node granted again while they would still have held it (read from it)"},
	{history.LostAtRestart, "leases a node restarted without persistence held, live past its restart, when it was killed (read just before the kill, its writes paused): the restart dropped them"},
	{history.LostReply, "replies of effect (a key set, a key deleted) to commands a node had applied that a lost-reply fault dropped on the wire (read from lockcheck's client proxy): whatever the client made of them"},
	{history.CancelledApplied, "ops a cancel fault cancelled while their command had reached Redis (its reply held on the connection the client dialed)"},
	{history.SentBehindCancel, "commands sent on a connection whose cancelled reply was pending at the cancel, the first after each: a client that kept the connection"},
	{history.RenewalStarved, "renewals a starve fault held back inside the client from while their holder was in its critical section until a TTL later, past their lease's end"},
	{history.RenewalPoolWait, "renewals sent from a critical section while a pool fault's traffic held every connection of their client's pool, a TTL or more before it came free: no connection for them until past their lease's end"},
	{history.UnlockDroppedWaiting, "pub/sub messages a drop-unlock fault dropped on the subscriber connection of a client waiting in a blocking acquire (its connection cut before it read them)"},
	{history.UnsyncedAtKill, "leases a node held when it was killed, live past its restart, whose grant was among the last second of writes that a power loss under appendfsync everysec dropped (read from the node, its writes paused, and from the AOF's cut tail; a lease that is a member of a key, as a semaphore's or a read-write lock's, also when its renewal was)"},
}

// AnyOf names a requirement that any of figures meets: its count
// (Coverage.Count) is their sum.
func AnyOf(figures ...string) string { return strings.Join(figures, "|") }

// Count is the count of figure name, or of an AnyOf the sum of its
// figures.
func (c Coverage) Count(name string) int {
	n := 0
	for _, f := range strings.Split(name, "|") {
		n += c[f]
	}
	return n
}

// Hit is the figure of fault windows that began while a lease was
// surely live; Windows counts the fault's windows.
func Hit(fault string) string { return hitPrefix + fault }

// Outlived is the figure of a fault's windows that ended while a lease
// live at their start was still surely live.
func Outlived(fault string) string { return outlivedPrefix + fault }
func Windows(fault string) string  { return windowsPrefix + fault }

// The prefixes of the per-fault figures (Hit, Outlived, Windows): their
// names are built and read here only.
const (
	hitPrefix      = "hit:"
	outlivedPrefix = "outlived:"
	windowsPrefix  = "windows:"
)

// OfWindows says whether figure name is read from the run's fault
// windows (a fault's hits, windows, outlived windows, or an event read
// from the servers in them), not counted key by key: the parts of a
// history split by key do not add up to it, the whole history's windows
// give it.
func OfWindows(name string) bool {
	for _, p := range []string{hitPrefix, outlivedPrefix, windowsPrefix} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(windowFigures, name)
}

// Merge adds o's figures to c, each: the coverage of runs one after
// another (a verify row's).
func (c Coverage) Merge(o Coverage) {
	for name, n := range o {
		c[name] += n
	}
}

// addKeyed adds o's figures counted key by key (not OfWindows) to c: the
// coverage of parts of one history split by key.
func (c Coverage) addKeyed(o Coverage) {
	for name, n := range o {
		if !OfWindows(name) {
			c[name] += n
		}
	}
}

// leaseSpan is one token's lease as the history shows it.
type leaseSpan struct {
	start int64 // first acquire call
	// steps are the acquires and extends that may have set its deadline,
	// in call order.
	steps       []*history.Op
	releaseCall int64 // first release call; MaxInt64 if none
	// released: a release that surely happened or surely did not (ok or
	// fail) was called: the holder was alive to release.
	released   bool
	releasedAt int64 // return of the first ok release; MaxInt64 if none
	acquiredAt int64 // return of the first ok acquire; MaxInt64 if none
	// holds are a reentrant owner's ok acquires (of a depth) less its ok
	// releases: an inner release leaves the key the owner's.
	holds int
}

const never = math.MaxInt64

// upper is the latest the lease could expire, counting the steps called
// before t, clock tolerance included.
func (l *leaseSpan) upper(t int64, o Options) int64 {
	var u int64
	for _, s := range l.steps {
		if s.Call >= t {
			break
		}
		d := s.Latest(int64(o.InfoHorizon)) + int64(s.TTL())
		if s.Mode == history.ExtendAdd {
			d = max(d, u+int64(s.TTL()))
		}
		u = max(u, d)
	}
	return u + int64(o.ClockTolerance)
}

// lower is the earliest the lease could expire, counting the ok steps
// that returned before t, less the clock tolerance; 0 if it was not surely
// held at t (not yet acquired, or a release was under way).
func (l *leaseSpan) lower(t int64, o Options) int64 {
	if l.acquiredAt >= t || l.releaseCall < t {
		return 0
	}
	var lo int64
	for _, s := range l.steps {
		if s.Type != history.OK || s.Return >= t {
			continue
		}
		d := s.Call + int64(s.TTL())
		if s.Mode == history.ExtendAdd {
			d = max(d, lo+int64(s.TTL())) // the earliest: added to what lo left
		}
		lo = max(lo, d)
	}
	return lo - int64(o.ClockTolerance)
}

// liveAt says whether the lease was surely live at t.
func (l *leaseSpan) liveAt(t int64, o Options) bool { return l.lower(t, o) > t }

// mayLiveAt says whether the lease could have been live at t.
func (l *leaseSpan) mayLiveAt(t int64, o Options) bool {
	return l.start <= t && t < l.releasedAt && t < l.upper(t, o)
}

// keyLeases are one key's leases in order of their first acquire.
type keyLeases struct {
	leases  []*leaseSpan
	maxSpan int64 // the longest any of them may have lasted
}

// near calls f for each lease of k that may have begun before t and may
// still have been live at t, until f returns false.
func (k *keyLeases) near(t int64, f func(*leaseSpan) bool) {
	i := sort.Search(len(k.leases), func(i int) bool { return k.leases[i].start > t })
	for i--; i >= 0 && k.leases[i].start >= t-k.maxSpan; i-- {
		if !f(k.leases[i]) {
			return
		}
	}
}

// waitedOut says whether op is an ok blocking acquire called while a
// lease of its key other than its own was surely live: the lock's first
// try was refused, and it waited for the key.
func waitedOut(op *history.Op, own *leaseSpan, k *keyLeases, o Options) bool {
	if op.Type != history.OK || op.WaitMs <= 0 || k == nil {
		return false
	}
	held := false
	k.near(op.Call, func(l *leaseSpan) bool {
		held = l != own && l.liveAt(op.Call, o)
		return !held
	})
	return held
}

// CoverageOf measures a history's coverage; o is resolved
// (Options.Resolved).
func CoverageOf(ops []history.Op, o Options) Coverage {
	cov, _ := coverageOf(ops, o)
	return cov
}

// coverageOf is CoverageOf, and for each fault window of ops whether a
// lease was live at its start. A history of a shape no registry holds
// counts a mutex's figures: its checkers say it is not judged.
func coverageOf(ops []history.Op, o Options) (Coverage, []windowHit) {
	byToken, keys := leaseSpans(ops, o)
	cov := Coverage{}
	sh, _ := shapeOf(ops, o)
	for _, f := range CoverageFigures {
		if shapeFigure(f.Name, sh) {
			cov[f.Name] = 0
		}
	}
	stale := map[*leaseSpan]bool{}
	_, scoped := o.NotJudged[LeaseContract]
	for i := range ops {
		op := &ops[i]
		if op.F == history.Acquire && (op.Type == history.Fail || waitedOut(op, byToken[op.Token], keys[op.Key], o)) {
			cov[Contended]++
		}
		l := byToken[op.Token]
		if l == nil || op.F == history.Acquire || op.F == history.Nemesis {
			continue
		}
		k := keys[op.Key]
		switch op.F {
		case history.Release, history.Extend:
			if op.Call <= l.upper(op.Call, o) {
				continue
			}
			name := lateFigures[op.F]
			switch otherLease(k, l, op.Call, o) {
			case keyFree:
				cov[name[0]]++
			case keyTaken:
				cov[name[1]]++
			}
		case history.Write:
			if !stale[l] && (scoped || op.Return > l.upper(op.Return, o)) && acquiredSince(k, l, op.Return) {
				stale[l] = true
				cov[StaleHolder]++
			}
		}
	}
	acquires := acquiresByKey(ops)
	cov[AbandonedTaken], cov[AbandonedTried] = abandoned(acquires, keys, o)
	cov[HeldPastTried] = heldPastTried(ops, acquires, o)
	if sh.coverage != nil {
		sh.coverage(shapeCounts{cov: cov, ops: ops, acquires: acquires, keys: keys, o: o})
	}
	cov[InfoContended] = infoContended(ops, o)
	cov[InfoSettled] = infoSettled(ops, o, func(op *history.Op) (mayWin bool) {
		l := byToken[op.Token]
		return l != nil && otherLease(keys[op.Key], l, op.Call, o) != keyTaken
	})
	ws := FaultWindows(ops)
	cov[WindowAcquires], cov[WindowInfo] = windowAcquires(ops, ws)
	hits := make([]windowHit, len(ws))
	for i, w := range ws {
		hits[i] = windowHit{hit: anyLive(keys, w.Start, o), outlived: outlived(keys, w, o), retaken: retakenSeen(keys, byToken, w.Retaken, o)}
	}
	countWindows(cov, ws, hits)
	return cov, hits
}

// windowHit is what a fault window met: a lease surely live at its
// start (hit), one still surely live when it ended (outlived), and how
// many of its lost leases' keys were granted again while the history
// shows them held (retaken).
type windowHit struct {
	hit, outlived bool
	retaken       int
}

// or is what either part of a history met in one window; the parts hold
// different keys, so their retaken add up.
func (h windowHit) or(o windowHit) windowHit {
	return windowHit{h.hit || o.hit, h.outlived || o.outlived, h.retaken + o.retaken}
}

// retakenSeen counts the grants rs (a window's Retaken, read from a node)
// that the history shows overlapping the lease the node lost: the lost
// lease (its token) surely held, acquired and not yet released, from
// before another lease of its key was acquired until that acquire
// returned, the acquire called no later than the node was heard setting
// the key. A lease overlapped so is a double holder whatever order the
// ops took effect in; a grant the node made after the first holder's
// release was called, or that no acquire of the history answers, is
// not. A grant whose lost token no acquire of the history carries (a
// lock whose key does not hold its token) counts as the node saw it;
// one on a key this part of the history lacks counts nowhere here.
func retakenSeen(keys map[string]*keyLeases, byToken map[string]*leaseSpan, rs []history.Retake, o Options) int {
	n := 0
	for _, r := range rs {
		k := keys[r.Key]
		if k == nil {
			continue
		}
		lost := byToken[r.Token]
		if lost == nil {
			n++
			continue
		}
		for _, m := range k.leases {
			if m != lost && m.start > lost.acquiredAt && m.start <= r.At && m.acquiredAt != never && lost.liveAt(m.acquiredAt, o) {
				n++
				break
			}
		}
	}
	return n
}

// countWindows adds to cov each fault's windows, those hit and those
// outlived.
func countWindows(cov Coverage, ws []FaultWindow, hits []windowHit) {
	for i, w := range ws {
		cov[Windows(w.Fault)]++
		for _, name := range windowFigures {
			if name == history.LostRetaken && w.Retaken != nil {
				// The node's grants, judged against the history.
				cov[name] += hits[i].retaken
				continue
			}
			cov[name] += int(w.Events[name])
		}
		for _, f := range []struct {
			name string
			met  bool
		}{{Hit(w.Fault), hits[i].hit}, {Outlived(w.Fault), hits[i].outlived}} {
			if _, ok := cov[f.name]; !ok {
				cov[f.name] = 0
			}
			if f.met {
				cov[f.name]++
			}
		}
	}
}

// outlived says whether a lease surely live when w began was still
// surely live when it was healed: a fault healed (a node back, empty)
// in time for another client to take a lease the fault may have lost.
func outlived(keys map[string]*keyLeases, w FaultWindow, o Options) bool {
	if w.Stop < 0 {
		return false
	}
	for _, k := range keys {
		found := false
		k.near(w.Start, func(m *leaseSpan) bool {
			found = m.liveAt(w.Start, o) && m.lower(w.Start, o) > w.HealedAt()
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// lateFigures are the free and taken figures of a late release and a
// late extend.
var lateFigures = map[history.Func][2]string{history.Release: {LateReleaseFree, LateReleaseTaken},
	history.Extend: {LateExtendFree, LateExtendTaken}}

// leaseSpans gathers each token's lease, and each key's leases.
func leaseSpans(ops []history.Op, o Options) (map[string]*leaseSpan, map[string]*keyLeases) {
	byToken := map[string]*leaseSpan{}
	keys := map[string]*keyLeases{}
	idx := make([]int, 0, len(ops))
	for i := range ops {
		if ops[i].F != history.Nemesis && ops[i].F != history.Write && ops[i].Token != "" {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return ops[idx[a]].Call < ops[idx[b]].Call })
	for _, i := range idx {
		op := &ops[i]
		l := byToken[op.Token]
		if l == nil {
			if op.F != history.Acquire || op.Type == history.Fail {
				continue // a release or extend of a lease never acquired
			}
			l = &leaseSpan{start: op.Call, releaseCall: never, releasedAt: never, acquiredAt: never}
			byToken[op.Token] = l
			if keys[op.Key] == nil {
				keys[op.Key] = &keyLeases{}
			}
			keys[op.Key].leases = append(keys[op.Key].leases, l)
		}
		switch {
		case op.F == history.Release && op.Type == history.OK && l.holds > 1:
			l.holds-- // a reentrant owner's inner release
		case op.F == history.Release:
			l.releaseCall = min(l.releaseCall, op.Call)
			l.released = l.released || op.Type != history.Info
			if op.Type == history.OK {
				l.releasedAt = min(l.releasedAt, op.Return)
			}
		case op.Type == history.Fail: // an acquire or extend that did not happen
		default:
			l.steps = append(l.steps, op)
			if op.F == history.Acquire && op.Type == history.OK {
				l.acquiredAt = min(l.acquiredAt, op.Return)
				if op.Depth > 0 {
					l.holds++
				}
			}
		}
	}
	for _, k := range keys {
		for _, l := range k.leases {
			k.maxSpan = max(k.maxSpan, min(l.releasedAt, l.upper(never, o))-l.start)
		}
	}
	return byToken, keys
}

// What otherLease found on a key.
const (
	keyUnclear = iota // another lease may have been live, or not
	keyFree           // no other lease could have been live
	keyTaken          // another lease was surely live
)

// otherLease says whether, at t, a lease on k other than l was surely
// live (taken), none could have been (free), or neither.
func otherLease(k *keyLeases, l *leaseSpan, t int64, o Options) int {
	state := keyFree
	k.near(t, func(m *leaseSpan) bool {
		switch {
		case m == l:
		case m.liveAt(t, o):
			state = keyTaken
			return false
		case m.mayLiveAt(t, o):
			state = keyUnclear
		}
		return true
	})
	return state
}

// acquiredSince says whether another client acquired k after l was
// acquired and before t.
func acquiredSince(k *keyLeases, l *leaseSpan, t int64) bool {
	// A lease acquired after l began no earlier than l's start less the
	// longest span (its acquire was called before it returned).
	i := sort.Search(len(k.leases), func(i int) bool { return k.leases[i].start >= l.start-k.maxSpan })
	for ; i < len(k.leases) && k.leases[i].start < t; i++ {
		if m := k.leases[i]; m != l && m.acquiredAt > l.acquiredAt && m.acquiredAt < t {
			return true
		}
	}
	return false
}

// acquiredAfter says whether another lease on k was acquired by a call
// after t.
func acquiredAfter(k *keyLeases, l *leaseSpan, t int64) bool {
	i := sort.Search(len(k.leases), func(i int) bool { return k.leases[i].start > t })
	for ; i < len(k.leases); i++ {
		if m := k.leases[i]; m != l && m.acquiredAt != never {
			return true
		}
	}
	return false
}

// allPermitsTried counts the acquires of acquires called while k other
// leases of their key were surely live.
func allPermitsTried(acquires map[string][]*history.Op, keys map[string]*keyLeases, k int, o Options) int {
	n := 0
	for key, as := range acquires {
		kl := keys[key]
		if kl == nil {
			continue
		}
		for _, a := range as {
			live := 0
			kl.near(a.Call, func(l *leaseSpan) bool {
				if l.liveAt(a.Call, o) {
					live++
				}
				return live < k
			})
			if live >= k {
				n++
			}
		}
	}
	return n
}

// shapeFigure says whether the figure name is one a history of shape sh
// reports: every figure no shape claims, and sh's own.
func shapeFigure(name string, sh Shape) bool {
	for _, s := range Shapes() {
		if slices.Contains(s.figures, name) {
			return slices.Contains(sh.figures, name)
		}
	}
	return true
}

// triedOverOtherMode counts a read-write lock's acquires called while a
// lease of their key in the other mode was surely live: write acquires
// over a reader (writer), read acquires over a writer (reader).
func triedOverOtherMode(acquires map[string][]*history.Op, keys map[string]*keyLeases, o Options) (writer, reader int) {
	for key, as := range acquires {
		kl := keys[key]
		if kl == nil {
			continue
		}
		for _, a := range as {
			write, over := a.Access == history.AccessWrite, false
			kl.near(a.Call, func(l *leaseSpan) bool {
				over = l.writes() != write && l.liveAt(a.Call, o)
				return !over
			})
			switch {
			case over && write:
				writer++
			case over:
				reader++
			}
		}
	}
	return writer, reader
}

// writes says the lease was taken in write mode: its first acquire's
// access.
func (l *leaseSpan) writes() bool {
	for _, s := range l.steps {
		if s.F == history.Acquire {
			return s.Access == history.AccessWrite
		}
	}
	return false
}

// abandoned counts the leases never released (crashed holders) whose
// key another client acquired, and tried, after they had surely expired.
func abandoned(acquires map[string][]*history.Op, keys map[string]*keyLeases, o Options) (taken, tried int) {
	for key, k := range keys {
		for _, l := range k.leases {
			if len(l.steps) == 0 || l.released {
				continue
			}
			gone := l.upper(never, o)
			if acquiredAfter(k, l, gone) {
				taken++
			}
			if triedAfter(acquires[key], l.steps[0].Token, gone) {
				tried++
			}
		}
	}
	return taken, tried
}

// acquiresByKey is each key's acquires, by call: built once a history,
// read by abandoned and heldPastTried.
func acquiresByKey(ops []history.Op) map[string][]*history.Op {
	acquires := map[string][]*history.Op{}
	for i := range ops {
		if op := &ops[i]; op.F == history.Acquire {
			acquires[op.Key] = append(acquires[op.Key], op)
		}
	}
	for _, as := range acquires {
		slices.SortFunc(as, func(a, b *history.Op) int { return cmp.Compare(a.Call, b.Call) })
	}
	return acquires
}

// triedAfter says whether an acquire of as (by call) other than token's
// was called after t.
func triedAfter(as []*history.Op, token string, t int64) bool {
	j, _ := slices.BinarySearchFunc(as, t+1, func(a *history.Op, t int64) int { return cmp.Compare(a.Call, t) })
	for ; j < len(as); j++ {
		if as[j].Token != token {
			return true
		}
	}
	return false
}

// anyLive says whether some lease was surely live at t.
func anyLive(keys map[string]*keyLeases, t int64, o Options) bool {
	if _, scoped := o.NotJudged[LeaseContract]; scoped {
		return anyHeld(keys, t)
	}
	for _, k := range keys {
		live := false
		k.near(t, func(m *leaseSpan) bool {
			live = m.liveAt(t, o)
			return !live
		})
		if live {
			return true
		}
	}
	return false
}

// anyHeld says whether a scope was surely held at t: acquired (its
// acquire returned ok) before t, its release not yet called. A lock whose
// leases are scopes renews them itself, unrecorded, so the TTL its
// acquire carries says nothing of when it ends: a rueidislock holder of
// 3 s on a 600 ms key was surely live, by its TTL, only in its first
// 600 ms, and cut-off met 2 hits in 76 windows. The holder is in its
// section until it releases or the library takes the scope back (it then
// leaves and releases): the fault window began on a holder, which is the
// chance its bug needs.
func anyHeld(keys map[string]*keyLeases, t int64) bool {
	for _, k := range keys {
		for _, l := range k.leases {
			if l.start > t {
				break
			}
			if l.acquiredAt < t && l.releaseCall > t {
				return true
			}
		}
	}
	return false
}

// FaultHit is one fault's coverage: its windows, and how many began while
// a lease was surely live.
type FaultHit struct {
	Fault         string
	Windows, Hits int
}

// FaultHits returns each fault's windows and hits, by fault name.
func (c Coverage) FaultHits() []FaultHit {
	var out []FaultHit
	for name, n := range c {
		if f, ok := strings.CutPrefix(name, windowsPrefix); ok {
			out = append(out, FaultHit{Fault: f, Windows: n, Hits: c[Hit(f)]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Fault < out[j].Fault })
	return out
}

// infoContended counts the InfoContended acquires of ops.
func infoContended(ops []history.Op, o Options) int {
	refused := map[string][]int64{} // each key's failed acquires' returns, ascending
	for i := range ops {
		if op := &ops[i]; op.F == history.Acquire && op.Type == history.Fail {
			refused[op.Key] = append(refused[op.Key], op.Return)
		}
	}
	for _, rs := range refused {
		slices.Sort(rs)
	}
	n := 0
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire || op.Type != history.Info {
			continue
		}
		rs := refused[op.Key]
		j, _ := slices.BinarySearch(rs, op.Call)
		if j < len(rs) && rs[j] <= op.Latest(int64(o.InfoHorizon)) {
			n++
		}
	}
	return n
}

// infoSettled counts the InfoSettled acquires of ops: an info acquire A
// on a key no lease surely held (mayWin says which) whose latest possible
// expiry (its latest effect, history.Op.Latest, plus its TTL and the clock
// tolerance) comes before the next indeterminate acquire or extend on its
// key is called, with an acquire of the key called in between. An
// indeterminate release does not break the quiet: it can only delete a
// key, never hold one on (Symfony's release reports no outcome, and every
// key of its runs had one within three seconds).
func infoSettled(ops []history.Op, o Options, mayWin func(*history.Op) bool) int {
	type keyOps struct{ info, acquires []int64 } // calls, ascending
	by := map[string]*keyOps{}
	for i := range ops {
		op := &ops[i]
		if op.F == history.Nemesis || op.Key == "" {
			continue
		}
		k := by[op.Key]
		if k == nil {
			k = &keyOps{}
			by[op.Key] = k
		}
		if op.Type == history.Info && op.F != history.Release {
			k.info = append(k.info, op.Call)
		}
		if op.F == history.Acquire {
			k.acquires = append(k.acquires, op.Call)
		}
	}
	for _, k := range by {
		slices.Sort(k.info)
		slices.Sort(k.acquires)
	}
	n := 0
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire || op.Type != history.Info || !mayWin(op) {
			continue
		}
		k := by[op.Key]
		gone := op.Latest(int64(o.InfoHorizon)) + op.TTLms*1_000_000 + int64(o.ClockTolerance)
		next := int64(math.MaxInt64)
		if j, _ := slices.BinarySearch(k.info, op.Call+1); j < len(k.info) {
			next = k.info[j]
		}
		if j, _ := slices.BinarySearch(k.acquires, gone+1); gone < next && j < len(k.acquires) && k.acquires[j] < next {
			n++
		}
	}
	return n
}

// heldPastTried counts the HeldPastTried leases of ops: an ok acquire
// of token T by process P returned at a with TTL ttl; T's first write
// returned at n; the lease surely ended by g = a + ttl + the clock
// tolerance, unless the lock renewed it; it counts if n > g and another
// process called an acquire of the key in (g, n). The workload ends a
// write before its lease's deadline, so only a client stopped before or
// in its section (pause-client, pause-holder) or one whose lock kept the
// lease on meets it.
func heldPastTried(ops []history.Op, acquires map[string][]*history.Op, o Options) int {
	wrote := map[string]int64{} // each token's first write's return
	for i := range ops {
		if op := &ops[i]; op.F == history.Write {
			if _, ok := wrote[op.Token]; op.Token != "" && !ok {
				wrote[op.Token] = op.Return
			}
		}
	}
	n := 0
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire || op.Type != history.OK {
			continue
		}
		left, ok := wrote[op.Token]
		gone := op.Return + op.TTLms*1_000_000 + int64(o.ClockTolerance)
		if !ok || left <= gone {
			continue
		}
		as := acquires[op.Key]
		j, _ := slices.BinarySearchFunc(as, gone+1, func(a *history.Op, t int64) int { return cmp.Compare(a.Call, t) })
		for ; j < len(as) && as[j].Call < left; j++ {
			if as[j].Process != op.Process {
				n++
				break
			}
		}
	}
	return n
}

// StallFaults are the faults whose windows WindowAcquires counts.
var StallFaults = []string{"pause-redis", "lost-reply"}

// windowAcquires counts the acquires of ops called inside a window of
// ws whose fault is a StallFaults one, and those of them that ended
// indeterminate.
func windowAcquires(ops []history.Op, ws []FaultWindow) (n, info int) {
	var spans [][2]int64
	for _, w := range ws {
		if slices.Contains(StallFaults, w.Fault) {
			stop := w.Stop
			if stop < 0 {
				stop = math.MaxInt64
			}
			spans = append(spans, [2]int64{w.Start, stop})
		}
	}
	if len(spans) == 0 {
		return 0, 0
	}
	// Merged and in order, so that each acquire is one binary search.
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		if last := &merged[len(merged)-1]; sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
		} else {
			merged = append(merged, sp)
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.F != history.Acquire {
			continue
		}
		j := sort.Search(len(merged), func(j int) bool { return merged[j][1] >= op.Call })
		if j == len(merged) || merged[j][0] > op.Call {
			continue
		}
		n++
		if op.Type == history.Info {
			info++
		}
	}
	return n, info
}
