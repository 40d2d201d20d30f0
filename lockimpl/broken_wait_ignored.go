package lockimpl

// brokenWaitIgnoredEntry is "broken-wait-ignored": Redisson #3994
// (https://github.com/redisson/redisson/issues/3994). Redisson's lock
// sent each command with WAIT for the replicas, and did not check WAIT's
// reply: a lease no replica had was granted all the same, and a failover
// (or the split brain of a partition) loses it.
var brokenWaitIgnoredEntry = Entry{Name: "broken-wait-ignored", Broken: true, Factory: newWaitIgnored, Waits: true, Topology: "sentinel",
	Description: "setnx-wait-all that ignores WAIT's reply, granting what no replica acknowledged (Redisson #3994): a split brain or a failover loses held leases"}

func newWaitIgnored(env Env) (Locker, error) {
	l, err := NewSetNXWaitAll(env)
	if err != nil {
		return nil, err
	}
	l.(*SetNXWaitAll).ignoreWait = true
	return l, nil
}
