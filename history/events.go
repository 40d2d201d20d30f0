package history

// The events faults read from the servers (and, lost-reply, from the
// wire in front of them) in their windows
// (NemesisValue.Events, FaultWindow.Events): declared here once, recorded
// by the nemesis, counted by the checker's coverage. A fault records them
// on its window; they are the window's, not a bucket's.
const (
	// GrantedByDeposed counts the keys a master cut off by a partition
	// set after a replica was promoted in its place, read from that
	// master (its keyspace notifications): leases granted on the losing
	// side of a split brain, the event a lock without replication safety
	// breaks on.
	GrantedByDeposed = "granted_by_deposed"
	// GrantedBothSides counts the keys the deposed master and the
	// promoted one held at once, read from both: the same lease granted
	// on both sides of a split brain.
	GrantedBothSides = "granted_both_sides"
	// LostAtPromotion counts the leases a master held just before it went
	// down that the replica promoted in its place lacked, read from both.
	LostAtPromotion = "lost_at_promotion"
	// LostRetaken counts the leases a promotion (a heal, a restart) lost
	// whose key the promoted master granted again while they would still
	// have held it (read from it), where the history shows the two leases
	// overlap: a second holder, the event a lock that loses leases at a
	// failover breaks on. The node cannot tell a grant that came after
	// the first holder's release (or before its acquire returned) from
	// one that overlaps it; the history can (the checker's retakenSeen).
	LostRetaken = "lost_retaken"
	// LostAtHeal counts the leases a partition's deposed master held when
	// the partition healed that the promoted master lacked, read from
	// both just before the heal: the heal makes the deposed master a
	// replica, which drops them while their holders may still hold them.
	LostAtHeal = "lost_at_heal"
	// ExpiredByClock counts the leases a node's clock jump expired at
	// once, read from the node before and after the jump: expiry moved
	// past what the clock tolerance and a client's margin absorb.
	ExpiredByClock = "expired_by_clock"
	// LostAtRestart counts the leases a node held just before it was
	// killed, live past its restart, that it lacked once restarted, read
	// from the node before the kill and after the restart: a restart
	// that forgot held locks (no persistence, an fsync not yet done).
	LostAtRestart = "lost_at_restart"
	// UnsyncedAtKill counts the leases a node held when it was killed,
	// live past its restart, whose grant (its SET) was among the writes
	// of the second before the kill, cut from the node's AOF as a power
	// loss under appendfsync everysec drops them, read from the node and
	// from the cut: an acknowledged grant the restart lost.
	UnsyncedAtKill = "unsynced_at_kill"
	// LostReply counts the replies a lost-reply fault dropped on the
	// wire (the client proxy of lockcheck's machine): replies to commands
	// the node had applied, which their client never read. It is the
	// fault's chance, whatever the client made of it: one that resends on
	// a new connection is answered there and ends no op indeterminate,
	// and one that resends an applied SET NX is told the key is taken.
	LostReply = "lost_reply"
	// CancelledApplied counts the ops a cancel fault cancelled while
	// their command had reached Redis: its reply had come back and was
	// held on the connection when the caller's context was cancelled
	// (read from the connection the lock's client dialed). Whatever the
	// client then did: waited and read it, or gave up.
	CancelledApplied = "cancelled_applied"
	// SentBehindCancel counts the commands sent, each the first after a
	// cancel, on a connection whose cancelled reply was pending at the
	// cancel: the client kept the connection, and a client that did not
	// read that reply first reads it as its next command's.
	SentBehindCancel = "sent_behind_cancel"
	// RenewalStarved counts the renewals a starve fault held back inside
	// the client (read from the go-redis hook of the lock's client) from
	// while their holder was in its critical section until a TTL later,
	// past the end of the lease they were to renew: whatever the holder
	// then did, left at its lease's end or worked on.
	RenewalStarved = "renewal_starved"
	// RenewalPoolWait counts the commands a pool fault's holders sent in
	// their critical section (their renewals) while the application's
	// traffic held every connection of their client's pool, a TTL or more
	// before the pool came free (read from the go-redis hook of the
	// lock's client): a renewal that could get no connection until past
	// the end of the lease it was to renew, whatever the lock then did
	// (waited for one, or gave up first).
	RenewalPoolWait = "renewal_pool_wait"
	// UnlockDroppedWaiting counts the pub/sub messages a drop-unlock
	// fault dropped (their subscriber connection cut before the client
	// read them) on a connection of a client that was in a blocking
	// acquire then: a waiter's wake-up lost, whatever the waiter then
	// did (slept on, or woke at its own poll).
	UnlockDroppedWaiting = "unlock_dropped_waiting"
)

// ServerEvents are the events above, each once.
var ServerEvents = []string{GrantedByDeposed, GrantedBothSides, LostAtHeal, LostAtPromotion, LostRetaken, ExpiredByClock, LostAtRestart, UnsyncedAtKill, LostReply, CancelledApplied, SentBehindCancel, RenewalStarved, RenewalPoolWait, UnlockDroppedWaiting}
