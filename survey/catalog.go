// Package survey is the survey of real lock libraries (docs/survey.md):
// which library, at which version, driven how, and what its source says
// of each break lockcheck found. The table itself is generated from the
// verify outputs (Write), never typed.
package survey

// Library is one surveyed lock library.
type Library struct {
	// Name is its row, and the directory of its outputs.
	Name     string
	Language string
	// Package and Version name the code, pinned: the Go module (survey's
	// go.mod) or the Debian package.
	Package, Version string
	// Flags select it on lockcheck's command line (lockcheck-survey) for
	// verify; Lock, if set, is its name in process (lockcheck-survey's
	// registry), for the skew sweep and the bench.
	Flags []string
	Lock  string
	// Shape says how it is driven and what it promises.
	Shape string
	// Assumes is what its documentation says it assumes, if anything.
	Assumes string
	// Client is the Redis client the library runs on, with its pinned
	// version, where it is a package of its own.
	Client string
	// Baseline marks lockcheck's own reference lock: breaks it shares
	// are those of every lock without fencing.
	Baseline bool
	// Skew: it computes expiry from its own clock, so the clock-skew
	// sweep measures it.
	Skew bool
	// Kind is the shape it is judged as (its table on the page), a
	// mutex where empty.
	Kind Kind
}

// Kind is a shape the survey judges a library as: each has its own
// table.
type Kind string

// The shapes beyond the mutex the survey drives (DESIGN.md, Shapes
// beyond the mutex).
const (
	Mutex     Kind = ""
	Semaphore Kind = "semaphore"
	ReadWrite Kind = "read-write"
)

// Kinds are the shapes in the page's order, each with its table's
// title.
var Kinds = []struct {
	Kind  Kind
	Title string
}{
	{Mutex, "Who keeps their promise"},
	{Semaphore, "Semaphores: who keeps their promise"},
	{ReadWrite, "Read-write locks: who keeps their promise"},
}

// Libraries are the survey's rows, the reference first.
var Libraries = []Library{
	{Name: "setnx", Language: "Go (reference)", Package: "lockcheck's own", Version: "-", Flags: []string{"--lock", "setnx"}, Baseline: true,
		Shape: "SET NX PX with a random token, compare-and-delete release, compare-and-PEXPIRE extend: the correct single-master lock without fencing"},
	{Name: "rueidislock", Language: "Go", Package: "github.com/redis/rueidis/rueidislock", Version: "v1.0.79", Skew: true, Lock: "rueidislock",
		Flags: []string{"--lock-cmd", "bin/lockcheck-survey serve --lock rueidislock", "--lock-watchdog", "--name", "rueidislock"},
		Shape: "TryWithContext: a context the library cancels when it cannot renew; KeyMajority 1, NoLoopTracking, KeyValidity the run's TTL, as its README sets it up for one Redis. " +
			"Served as a lock process (lockcheck serve), one per client where clients are paused or crashed, so that a pause stops its renewals too",
		Assumes: "none stated about clocks; SET PXAT needs Redis >= 6.2, FallbackSETPX otherwise"},
	{Name: "valkeylock", Language: "Go", Package: "github.com/valkey-io/valkey-go/valkeylock", Version: "v1.0.79", Skew: true, Lock: "valkeylock",
		Flags: []string{"--lock-cmd", "bin/lockcheck-survey serve --lock valkeylock", "--lock-watchdog", "--name", "valkeylock"},
		Shape: "rueidislock's fork, set up and served the same way"},
	{Name: "go-zero", Language: "Go", Package: "github.com/zeromicro/go-zero core/stores/redis.RedisLock", Version: "v1.10.3", Lock: "go-zero",
		Flags: []string{"--lock-cmd", "bin/lockcheck-survey serve --lock go-zero", "--lock-topology", "single", "--budget", "15m", "--name", "go-zero"},
		Shape: "NewRedisLock, SetExpire(seconds), AcquireCtx, ReleaseCtx; renewed by AcquireCtx again; TTL whole seconds (rounded up) + 500 ms, so verify sizes each scenario to its keys (x15 for 100 ms leases, which take longer: a 15 min budget); one node (no Sentinel client). " +
			"Served as a lock process, a fresh one each run: go-zero keeps one client per address for the life of the process (its clientManager) with a circuit breaker"},
	{Name: "redislock", Language: "Go", Package: "github.com/bsm/redislock", Version: "v0.9.4", Flags: []string{"--lock", "redislock"},
		Shape: "Obtain (SET NX PX in Lua), Refresh, Release, no retry (the workload retries)"},
	{Name: "redsync", Language: "Go", Package: "github.com/go-redsync/redsync/v4", Version: "v4.18.1", Flags: []string{"--lock", "redsync"},
		Shape:   "Redlock over 5 masters: TryLockContext, ExtendContext, UnlockContext",
		Assumes: "Redlock's: bounded clock drift, and a restarted master that comes back after the TTL (or with fsync=always)"},
	{Name: "redis-py", Language: "Python", Package: "python3-redis (redis-py)", Version: "4.3.4-3", Flags: []string{"--lock-cmd", "examples/adapters/redispy/lock.py", "--name", "redis-py"},
		Shape: "redis.lock.Lock: one object per lease, acquire(blocking=False, token), release, extend(replace_ttl=True); one process, a thread per request"},
	{Name: "tooz", Language: "Python", Client: "python3-redis (redis-py) 4.3.4-3", Package: "python3-tooz (OpenStack tooz, Redis driver)", Version: "3.1.0-3", Flags: []string{"--lock-cmd", "examples/adapters/tooz/lock.py", "--budget", "15m", "--name", "tooz"},
		Shape: "coordinator.start(start_heart=True), get_lock(name).acquire(blocking=False), release(); the heart renews every held lock each lock_timeout/2 and reports no loss: judged as scopes; lock_timeout whole seconds, so its scenarios are sized to its keys too (a 15 min budget)"},
	{Name: "symfony", Language: "PHP", Client: phpredis, Package: "php-symfony-lock (Symfony Lock, RedisStore)", Version: "5.4.53+dfsg-0+deb12u1", Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib symfony", "--lock-cmd-per-client", "--name", "symfony"},
		Shape: "LockFactory(RedisStore)->createLock(key, ttl, autoRelease false): acquire(false), refresh(ttl), release(); one PHP process per client. " +
			"release() reports no outcome (RedisStore::delete ignores its script's answer), so its releases are recorded indeterminate, answered (taken effect by their return if at all)"},
	{Name: "symfony-redlock", Language: "PHP", Client: phpredis, Package: "php-symfony-lock (Symfony Lock, CombinedStore + ConsensusStrategy over a RedisStore per master)", Version: "5.4.53+dfsg-0+deb12u1",
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib symfony-redlock", "--lock-cmd-per-client", "--lock-topology", "redlock", "--name", "symfony-redlock"},
		Shape: "Symfony's Redlock: LockFactory(new CombinedStore([RedisStore per master], new ConsensusStrategy())), each acquire connecting to Redlock's five masters afresh, as a PHP request does; acquire(false), refresh(ttl), release(). " +
			"acquire(false) is false both when a majority refused and when the votes split (CombinedStore::save deletes what it set either way), so a failed acquire is recorded undone (counted, not recorded), as lockcheck's own Redlocks record theirs; release() reports no outcome (indeterminate); one PHP process per client"},
	{Name: "laravel", Language: "PHP", Client: phpredis, Package: "php-illuminate-cache (Laravel cache lock) with php-illuminate-redis", Version: "8.83.26+dfsg-2", Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib laravel", "--lock-cmd-per-client", "--lock-no-extend", "--name", "laravel", "--budget", "10m"},
		Shape: "PhpRedisLock(connection, key, seconds, owner): get(), release(); SET NX EX whole seconds (rounded up); no extend; one PHP process per client"},
	{Name: "malkusch", Language: "PHP", Client: phpredis, Package: "php-malkusch-lock (malkusch/lock, PHPRedisMutex)", Version: "2.2.1+ds-1", Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib malkusch", "--lock-cmd-per-client", "--lock-no-extend", "--name", "malkusch", "--budget", "10m"},
		Shape: "new PHPRedisMutex([redis], name, timeout)->synchronized(callback): the acquire is answered from inside the callback, which returns when the release comes; SET NX EX timeout+1 on key lock_NAME (timeout: the TTL in whole seconds, rounded up), lock() spinning up to timeout seconds; " +
			"an unlock after timeout seconds sends no release and throws (recorded indeterminate); no extend; one node, as its README's example; one PHP process per client"},
	{Name: "malkusch-redlock", Language: "PHP", Client: phpredis, Package: "php-malkusch-lock (malkusch/lock, PHPRedisMutex over N masters)", Version: "2.2.1+ds-1",
		Flags:   []string{"--lock-cmd", "examples/adapters/php/lock.php --lib malkusch-redlock", "--lock-cmd-per-client", "--lock-topology", "redlock", "--lock-no-extend", "--name", "malkusch-redlock", "--budget", "10m"},
		Shape:   "the same mutex given a client per master (its README: \"the distributed lock implementation of RedLock\"), each acquire connecting to Redlock's five masters afresh; a lock() that timed out is recorded undone (each failed try deleted what it set; the library does not say whether the key was taken or the votes split); one PHP process per client",
		Assumes: "Redlock's (its README points to redis.io's distlock)"},
	// Surveyed since 2026-11-29, after the others so that the archived
	// bench's lock processes keep their numbers (cmd1, cmd2, ...).
	{Name: "symfony-semaphore", Language: "PHP", Client: phpredis, Package: "php-symfony-semaphore (Symfony Semaphore, RedisStore)", Version: "5.4.53+dfsg-0+deb12u1", Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib symfony-semaphore", "--lock-cmd-per-client", "--name", "symfony-semaphore"},
		Shape: "a semaphore of limit 1 for a lock: SemaphoreFactory(RedisStore)->createSemaphore(key, 1, 1, ttl, autoRelease false): acquire(), refresh(ttl), release(); no key with a TTL but two sorted sets ({key}:weight, {key}:time) whose members expire at a score of the client's time() (whole seconds) plus the TTL, pruned by the next client's script with its own time(); " +
			"release() reports no outcome (indeterminate); one PHP process per client"},
	{Name: "laravel-funnel", Language: "PHP", Client: phpredis, Package: "php-illuminate-redis (Laravel's concurrency limiter, ConcurrencyLimiter)", Version: "8.83.26+dfsg-2", Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib laravel-funnel", "--lock-cmd-per-client", "--lock-no-extend", "--name", "laravel-funnel", "--budget", "10m"},
		Shape: "a concurrency limiter of one slot for a lock, as its documentation shows it: funnel(key)->limit(1)->releaseAfter(seconds)->block(0)->then(callback, failure); the callback is the lease, suspended in a Fiber until its release; its slot is a key KEY1 set NX-like by a script (EX whole seconds, rounded up); " +
			"the release deletes the slot if it still holds its id and reports no outcome (indeterminate, answered: taken effect by its return if at all); no extend; one PHP process per client"},
	// The shapes beyond the mutex (issue 63), each a table of its own:
	// after the mutexes, and out of the bench (a mutex's workload).
	{Name: "symfony-semaphore-3", Language: "PHP", Client: phpredis, Package: "php-symfony-semaphore (Symfony Semaphore, RedisStore)", Version: "5.4.53+dfsg-0+deb12u1", Kind: Semaphore,
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib symfony-semaphore", "--lock-cmd-per-client", "--permits", "3", "--name", "symfony-semaphore-3"},
		Shape: "a semaphore of 3 permits: createSemaphore(key, 3, 1, ttl, autoRelease false), acquire(), refresh(ttl), release(), as symfony-semaphore's row drives it with limit 1; its members expire at the client's time() (whole seconds) plus the TTL; release() reports no outcome (indeterminate); one PHP process per client"},
	{Name: "laravel-funnel-3", Language: "PHP", Client: phpredis, Package: "php-illuminate-redis (Laravel's concurrency limiter, ConcurrencyLimiter)", Version: "8.83.26+dfsg-2", Kind: Semaphore,
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib laravel-funnel", "--lock-cmd-per-client", "--lock-no-extend", "--permits", "3", "--name", "laravel-funnel-3", "--budget", "10m"},
		Shape: "a concurrency limiter of 3 slots, as its documentation shows it: funnel(key)->limit(3)->releaseAfter(seconds)->block(0)->then(callback, failure), the callback the lease, suspended in a Fiber until its release; its slots are keys KEY1..KEY3, each taken NX-like by a script (EX whole seconds, rounded up); the release deletes the slot if it still holds its id and reports no outcome (indeterminate); no extend; one PHP process per client"},
	{Name: "symfony-shared", Language: "PHP", Client: phpredis, Package: "php-symfony-lock (Symfony Lock, RedisStore as a SharedLockStoreInterface)", Version: "5.4.53+dfsg-0+deb12u1", Kind: ReadWrite,
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib symfony-shared", "--lock-cmd-per-client", "--readers", "0.5", "--name", "symfony-shared"},
		Shape: "Symfony Lock's shared lock as a read-write lock, half the acquires reads: createLock(key, ttl, autoRelease false), acquireRead(false) for a read, acquire(false) for a write, refresh(ttl), release(); no writer preference (a reader is refused only while a writer holds the key); release() reports no outcome (indeterminate); one PHP process per client"},
}

// NotSurveyed are the libraries the issue named, or that install here,
// that the survey does not run, each with why.
var NotSurveyed = []struct{ Name, Why string }{
	{"malkusch/lock's PredisMutex", "the same RedisMutex as PHPRedisMutex over another client (php-predis); the survey drives phpredis, as the other PHP locks"},
	// Named by issue 63 for the read-write table.
	{"jefferyjob/go-redislock's read lock and write lock", "the Go module proxy refuses github.com/jefferyjob/go-redislock (403 Forbidden, every version), so survey/go.mod cannot pin it, and the survey does not carry a copy of its source"},
	{"cheerego/go-redisson", "it has no read-write lock: its rwlock.go is the one line `package godisson` at every tag (v0.0.4, v0.0.5, v0.0.6) and at every commit since the file was added (2022-05-07), as is its fairlock.go; " +
		"what it offers is NewMutex and NewRLock, Redisson's RLock, a reentrant mutex, not a read lock. The Go module proxy refuses it too (403 Forbidden)"},
	{"me-cs/goRedisson", "a Go port of Redisson whose GetReadWriteLock(key).ReadLock() and WriteLock() run Redisson's RReadWriteLock scripts, each lease owned by the goroutine that took it: the proxy refuses github.com/me-cs/goRedisson (403 Forbidden)"},
}

// Other are findings outside the battery's verdicts.
var Other = []struct{ Lib, Text string }{
	{"malkusch-redlock", "no validity step, read in the code, not seen to break: RedisMutex::acquire sets the key on the masters one after another and holds the lock when a majority took it within the whole expiry, " +
		"`$isAcquired = $this->isMajority($acquired) && $elapsedTime <= $expire` (classes/mutex/RedisMutex.php:84 at 2.2.1), where Redlock's algorithm leaves the holder the TTL less the time the pass took (and the drift), and no lock when none is left; " +
		"the callback then runs with no deadline (the time is looked at only in unlock, SpinlockMutex.php:80-84). No run of this survey showed a break from it."},
	{"go-zero", "a data race in its circuit breaker, reported by Go's race detector whenever the breaker opens while requests fail (`TestGoAdapters_Contention` runs go-zero without the detector for it): " +
		"`errorWindow.String` sizes its slice from `ew.count` before it takes `ew.lock` (core/breaker/breaker.go:268 at v1.10.3), while `errorWindow.add` updates `ew.count` under the lock (breaker.go:263) from the requests that fail; " +
		"`loggedThrottle.logError` formats the window when a request is dropped (breaker.go:246). The read only sizes a slice, so the lock's behaviour does not change, but a program built with -race that uses go-zero's Redis client fails its tests."},
	{"go-zero", "its circuit breaker opens on go-zero's own cold start and then drops releases: the bench's cells at 500 clients, a fraction of its bare loop's rate (the bare loop runs after the run has loaded the scripts) or none where the breaker never closed. " +
		"The breaker hook wraps every command (core/stores/redis/breakerhook.go:24-33 at v1.10.3) and counts as a failure any error but nil, redis.Nil and a cancelled context (redis.go:2762-2763). " +
		"RedisLock runs its Lua through go-redis's Script.Run, which sends EVALSHA and, on NOSCRIPT, EVAL (script.go:193-199 at go-redis v9.23.0): each client's first EVALSHA before Redis has cached the script is a failure to the breaker, though the lock's call succeeds; " +
		"on Redis before 7.2 each new connection's CLIENT SETINFO, sent in a pipeline through the same hooks, fails too (Redis 7.0 here). 50 clients starting at once on 10 keys open it, and clients that try again at once keep it open: " +
		"its drop ratio weighs the window's total against its accepts (core/breaker/googlebreaker.go:53-60), and a dropped request adds to the total and not to the accepts (googlebreaker.go:94-95, bucket.go:35-38), over a 10 s window. " +
		"A dropped release is breaker.ErrServiceUnavailable from ReleaseCtx (redislock.go:89-93): the key stays set for its TTL + 500 ms, refused to every client. " +
		"TestGoZero_BreakerColdStart (survey/golocks) runs 50 clients on 10 keys, up to 200 attempts each: from a fresh Redis, 3 releases dropped within them (7 to 10 acquisitions, every one's release dropped, in 441 to 3,846 attempts, quiet and beside two spinning cores; not every cold start opens it: a fresh-clone CI run's first acquired 3,011 times and dropped 2 releases, and the test tries up to five fresh Redis); the same load with the scripts loaded first by one acquire and release alone and CLIENT SETINFO off (go-zero's DisableIdentity) drops nothing in its 10,000 attempts (about 2,000 acquisitions): a breaker that counted no failure never drops. " +
		"Five runs each of the same load against a fresh Redis, beside a CI run: from cold, 0 to 28 acquisitions; with both scripts loaded first and CLIENT SETINFO off (go-zero's WithIdentity), 1,601 to 2,314 and nothing dropped."},
}

// Corrections are what an earlier page published that was wrong (breaks
// that were lockcheck's, mechanisms that did not hold when the library
// ran alone), with what they were and the fix.
var Corrections = []struct{ Was, Why string }{
	{"malkusch at `pause` and `overrun-free`, malkusch-redlock at `overrun-free`: lease broke (the page of 2026-11-27, before 4b9c2ca; malkusch-redlock's was put down to RedisMutex.php:84 at 2.2.1)",
		"lockcheck's, not the library's. Traced on the node with MONITOR against the history: the acquires the lease model found too close together were granted at the end of a run, after another client's PHP process had exited and deleted its key. " +
			"Its adapter holds each lease in a Fiber suspended inside synchronized(); PHP unwinds a suspended Fiber at shutdown (exit() too), the callback's finally runs malkusch's unlock, and the key goes: a release lockcheck did not ask for and did not record. " +
			"A lock process's leases still held when lockcheck closes it are now recorded released with an unknown outcome from the close (TestProcess_LeftHeldAtClose; TestProcessAdapters_ExitReleases: malkusch's key is gone at the exit, Symfony's stays); " +
			"malkusch then held the lease contract over 34 runs of overrun-free, malkusch-redlock over 13."},
	{"symfony-semaphore at `overrun`, `overrun-free`, `extend`, `crash`, `cut-off`, `pause-redis`, `lost-reply` and `stall-quiet` (the pages of 2026-11-29 and before): \"a lease outlives it until the next whole second\"",
		"wrong mechanism. With a TTL that is not a whole number of seconds (these scenarios' 100-600 ms) the save script fails at `EXPIREAT weightKey maxExpiration + 10` (Store/RedisStore.php:91 at 5.4.53) after its `ZADD` (:86) has run and stays: every acquire fails, and the member left blocks the key until the next whole second; refresh fails the same way (:136). Found by an independent read and shown alone by survey/demos/symfony-semaphore-expireat.php; the whole-second expiry holds for the 1 s scenarios (contention, kill-always, kill-delayed, kill-extend)."},
	{"redsync, symfony-redlock and malkusch-redlock at `clock-quorum`: \"a forward jump on a majority of masters\"",
		"the fault jumps one node of the bare majority, after the two masters that were down came back empty (nemesis/clock_quorum.go)."},
	{"Breaks particular to a library, its first line: \"where setnx passes the same scenario\"",
		"false for the six clock-quorum and kill-quorum entries, where setnx is n/a (a single-master lock on Redlock's scenarios); each entry now says the reference lock's cell."},
	{"malkusch at `pause-redis` and `stall-quiet`: the mechanism without its setting, and \"Documented: no\"",
		"the desync needs a read timeout shorter than the stall: the adapter sets 0.5 s, where malkusch's README connects with phpredis's default (default_socket_timeout, 60 s), under which a 1 s stall cannot desync; phpredis #1222 reports a read timeout leaving a connection out of step. Both are in the entries now (Depends on, Documented)."},
	{"tooz, go-zero, redsync and symfony-redlock: \"Documented\" lines that omitted what the library offers or says",
		"tooz offers `is_still_owner()` (tooz/locking.py:59, tooz/drivers/redis.py:93 in Debian's 3.1.0), which the adapter never calls; go-zero's documentation advertises renewal by re-acquiring, which is how the adapter renews; redsync #186 describes the quorum-loss sequence; Symfony's documentation recommends delaying a restart past the longest TTL."},
	{"The library table: malkusch's php-redis as 2.2.1", "2.2.1+ds-1 is php-malkusch-lock's version; php-redis is 5.3.7+4.3.0-3 (every PHP library's client now has its own version in the table)."},
	{"rueidislock and valkeylock at `extend`: \"after a renewal fails or an invalidation arrives\", and the overlap figure unexplained",
		"an invalidation makes the library renew at once rather than cancel; only a failed renewal cancels (rueidislock/lock.go:283-288, 295-296 at v1.0.79). The overlap quoted includes the whole freeze of the lock process, during which lockcheck counts its client as in its section; the entry says so."},
}

// Mechanism is what a library's source says of a break lockcheck found,
// read at the pinned version: where, why, and whether the library
// documents it.
type Mechanism struct {
	Text       string
	Documented string
	// Depends is what the mechanism depends on: the adapter's settings
	// that differ from the library's README, and the TTL or timeout at
	// which it appears (and whether at the library's defaults).
	Depends string
	// NoDemo is why no demonstration can show the mechanism without
	// lockcheck, where none can.
	NoDemo string
}

// Mechanisms are keyed "library scenario" ("library skew" for the
// clock-skew sweep); a break without one says so.
var Mechanisms = map[string]Mechanism{
	"go-zero extend": {Text: "go-zero has no extend: a holder renews by calling `AcquireCtx` again on its `RedisLock` (redislock.go:60-81 at v1.10.3), which runs lockscript.lua with the same id: " +
		"`if GET == id then SET PX` (lockscript.lua:1-3) `else SET NX PX` (lockscript.lua:5). A renewal that reaches Redis after the holder's release, or after its key expired, finds the key free and takes it again: " +
		"a lock nobody holds, refused to every other client until its TTL (+500 ms) runs out. After an expiry, a renewal sent while another client holds the key answers false (its `SET NX` refused), and one sent once the key is free again answers true: a renewal reported successful that hides another client's hold between the two (survey/demos/gozero-renew).",
		Documented: goZeroRenewDoc,
		Depends:    "no setting of the adapter's: go-zero's TTL is whole seconds (SetExpire) + 500 ms, and a renewal that arrives after the lease's release or expiry takes the key whatever the TTL"},
	"rueidislock extend": rueidisPause, "valkeylock extend": rueidisPause,
	"rueidislock failover": rueidisSwitch, "rueidislock partition": rueidisSwitch, "rueidislock partition-detect": rueidisSwitch,
	"valkeylock failover": valkeySwitch, "valkeylock partition": valkeySwitch, "valkeylock partition-detect": valkeySwitch,
	"redsync kill-quorum": {Text: "redsync takes the lock on `quorum = len(pools)/2 + 1` masters (redsync.go:40 at v4.18.1) and holds it on any `n >= m.quorum` (mutex.go:116): a lease on a bare majority is lost when one of those masters restarts without its key, and another client then wins a majority (redsync #186).",
		Documented: "as Redlock's assumption: the Redlock page asks for restarts delayed past the TTL (or fsync=always); redsync's README does not, and redsync #186 (\"Potential quorum-loss edge-case\", open since 2025-07) describes this sequence step by step. Of its checks, the deprecated `Valid`/`ValidContext` (mutex.go:175-194 at v4.18.1) asks the masters and answers false after the restart; `Until()`, the one it recommends, is still ahead",
		Depends:    killQuorumDepends},
	"redsync clock-quorum": {Text: "redsync's validity is computed on the client's clock, `until = now + expiry - elapsed - expiry*driftFactor` (mutex.go:115 at v4.18.1, driftFactor 0.01), while each master expires its key on its own clock. " + clockQuorumFault + " while the holder's `until` is still ahead.",
		Documented: "as Redlock's assumption of bounded clock drift (the 1% driftFactor); a jump is outside it",
		Depends:    clockQuorumDepends},
	"symfony-redlock kill-quorum": {Text: "CombinedStore::save counts the stores that saved the key and succeeds once ConsensusStrategy::isMet, more than half of them (Store/CombinedStore.php:60-91, Strategy/ConsensusStrategy.php:24-26 at 5.4.53): a lease held on a bare majority (3 of 5) is lost when one of those masters restarts without the key, and another client then wins a majority (redsync #186's mechanism).",
		Documented: "yes: Symfony Lock's documentation (components/lock, Reliability) recommends delaying a restarted server's start by at least the longest lock TTL, as Redlock's page does; the Debian package ships no documentation of its own",
		Depends:    killQuorumDepends},
	"symfony-redlock kill-extend": {Text: "CombinedStore::putOffExpiration extends the key on every store and needs a majority of them again (Store/CombinedStore.php:135-172 at 5.4.53), and a refresh that does not get one fails. In the run, one master of five (n4) was down and one refresh failed, of one lease, while the others' succeeded: that lease was on fewer than five masters (a bare majority is enough to acquire, CombinedStore.php:60-91) or another master failed to answer; the history cannot say which. When a refresh fails, CombinedStore deletes the key on the masters that still hold it (CombinedStore.php:171) and throws LockConflictedException, which `Lock::refresh` passes on (Lock.php:218-221). " +
		"A live lease is lost and its holder told it conflicted; the holder stops, so mutual exclusion holds, but the lease contract (a lease lives until its release or its TTL) does not. redsync, whose refresh needs the same majority, passed this scenario in both seeds: a bare majority at the moment of a kill is a matter of timing.",
		Documented: "as Redlock's: a lock held by a bare majority does not survive the loss of one of its nodes",
		Depends:    "a refresh while a node that holds the lease is down and the lease is on no more than a bare majority; any TTL, at the library's defaults"},
	"symfony-redlock clock-quorum": {Text: "the lease's deadline is on the client's clock: `Key::reduceLifetime` sets `expiringTime = microtime(true) + ttl` and `isExpired` compares it with `microtime(true)` (Key.php:71-90 at 5.4.53), while each master expires its key on its own clock. " + clockQuorumFault + " while the holder's lock is not expired by its own clock.",
		Documented: "as Redlock's assumption of bounded clock drift; a jump is outside it",
		Depends:    clockQuorumDepends},
	"malkusch-redlock kill-quorum": {Text: "RedisMutex::acquire holds the lock when `isMajority($acquired)`, more than half of the masters (classes/mutex/RedisMutex.php:84, 148-150 at 2.2.1): a lock on a bare majority is lost when one of those masters restarts without the key, and another client then wins a majority.",
		Documented: "as Redlock's assumption: its README calls PHPRedisMutex \"the distributed lock implementation of RedLock\"",
		Depends:    killQuorumDepends},
	"malkusch-redlock clock-quorum": {Text: "the holder has no deadline at all: the key is set `NX EX timeout+1` (PHPRedisMutex.php:55, SpinlockMutex.php:73 at 2.2.1) and expires on each master's clock, while the callback runs until it returns; only `unlock()` compares the time spent with the timeout, on the client's clock, after the fact (SpinlockMutex.php:80-84, ExecutionOutsideLockException). " + clockQuorumFault + " while the holder's callback runs on.",
		Documented: "partly: ExecutionOutsideLockException says, afterwards, that the code ran past the timeout",
		Depends:    clockQuorumDepends},
	"malkusch kill-delayed": {Text: "the key outlives the timeout it was given by a second: `SpinlockMutex::lock` sets it `NX EX timeout + 1` " +
		"(classes/mutex/SpinlockMutex.php:66-73 at 2.2.1: \"increased by one second to ensure that we delete only our keys\"), so a 1 s timeout is a 2 s key. " +
		"kill-delayed restarts a node without persistence once the TTL it asked for (1 s) and 500 ms have passed, the rule that keeps a lock whose key lives its TTL safe (lockcheck's reference lock passes it): " +
		"in the run that broke, a key set at 1.444 s (EX 2) was on the node killed at 1.73 s; the node came back empty at 3.24-3.45 s, before the key's 3.444 s, and granted it to another client at 3.30 s. " +
		"A restart delay sized to the documented timeout is too short for this lock by the added second. Two callbacks overlap through it only when the first has run past its own timeout: a callback within it has returned before such a restart, and one past it gets ExecutionOutsideLockException from `unlock()`, which then sends no release (SpinlockMutex.php:81-84 at 2.2.1).",
		Documented: "no: the constructor documents `$timeout` as \"the time in seconds a lock expires\" (SpinlockMutex.php:50); the added second is a comment in the code, not in the README",
		Depends:    "a restart without persistence delayed by the documented timeout (lockcheck restarts after the TTL + 500 ms): at any timeout the key lives one second more; at the library's defaults"},
	"go-zero cut-off": {Text: "the same renewal by re-acquire (lockscript.lua:1-5 at v1.10.3): renewals sent while the client was cut off from Redis time out, and one that reaches Redis late, after the holder's release or after its lease expired, takes the free key again for a holder that has let go: the key stays refused to everyone until its TTL (+500 ms) runs out. " +
		"`AcquireCtx`'s deadline does not bound the command: go-zero leaves go-redis's ContextTimeoutEnabled false, so a renewal held on the wire fails only at the client's own read timeout (5 s in the demonstration), by which time a lease shorter than that has expired.",
		Documented: goZeroRenewDoc,
		Depends:    "a renewal that reaches Redis after the holder gave up on it: in cut-off the adapter gives up at lockcheck's op timeout (300 ms); go-zero alone gives up only at its client's read timeout, so there the renewal must outlast that (the demonstration's lease is SetExpire(7))"},
	"tooz kill-everysec": toozHeart, "tooz kill-always": toozHeart, "tooz kill-delayed": toozHeart, "tooz pause-redis": toozHeart, "tooz cut-off": toozHeart,
	"tooz stall-quiet": toozHeart, "tooz kill-extend": toozHeart,
	"go-zero lost-reply": {Text: "go-zero's Redis client resends a command whose reply was lost: it sets `MaxRetries: maxRetries`, 3 (core/stores/redis/redisclientmanager.go:14, 37 at v1.10.3), and go-redis (v9.23.0) runs each command up to MaxRetries+1 times (redis.go:1593), again after a connection that ended without a reply (`shouldRetry`: io.EOF, error.go:90). " +
		"`ReleaseCtx` runs delscript.lua, `if GET == id then DEL else return 0` (delscript.lua:1-5), and reports `reply == 1` (redislock.go:89-100): a release whose first attempt deleted the key and lost its reply is sent again, finds the key gone, and answers false. The lease was released while its holder is told it was not (in the run, another client acquired the key during that release). " +
		"On a fresh node the first EVALSHA answers NOSCRIPT and go-redis sends EVAL instead (script.go:193-199 at go-redis v9.23.0): that EVAL is the attempt whose reply was lost and which was resent in the demonstration. " +
		"Its acquire is resent too, safely: lockscript.lua takes the key again when it holds the same id.",
		Documented: "no: go-zero documents neither the retries of its Redis client nor what a false release means",
		Depends:    "go-zero's own client settings (MaxRetries 3, not the adapter's) and a release's reply lost after Redis applied it; any TTL"},
	"malkusch pause-redis":           phpredisDesync,
	"malkusch stall-quiet":           phpredisDesync,
	"symfony-semaphore contention":   semaphoreSecond,
	"symfony-semaphore overrun":      semaphoreExpireAt,
	"symfony-semaphore overrun-free": semaphoreExpireAt,
	"symfony-semaphore extend":       semaphoreExpireAt,
	"symfony-semaphore pause":        semaphoreExpireAt,
	"symfony-semaphore crash":        semaphoreExpireAt,
	"symfony-semaphore cut-off":      semaphoreExpireAt,
	"symfony-semaphore pause-redis":  semaphoreExpireAt,
	"symfony-semaphore lost-reply":   semaphoreExpireAt,
	"symfony-semaphore stall-quiet":  semaphoreExpireAt,
	"symfony-semaphore kill-always":  semaphoreSecond,
	"symfony-semaphore kill-delayed": semaphoreSecond,
	"symfony-semaphore kill-extend":  semaphoreSecond,
	"laravel-funnel-3 kill-none":     laravelSlots("A restart without persistence empties the slots while their holders' callbacks run on, and the next clients take them: a fourth holder beside three (in the run, the node killed at 2.03 s and restarted empty, a fourth holder entered at 2.096 s beside three whose slots, taken at 1.73-1.99 s, the restart forgot)."),
	"laravel-funnel-3 kill-everysec": laravelSlots("A restart that lost the last second of writes (appendfsync everysec) loses the slots taken in it, and the next clients take them while their holders' callbacks run on (in the run, a fourth holder entered at 2.951 s, as the node came back from its first kill, 11 writes unsynced at it)."),
	"laravel-funnel-3 clock-jump":    laravelSlots("A jump of Redis's clock past `releaseAfter` expires the slots at once while their holders' callbacks run on (in the run, the first jump, at 1.93 s, expired 13 keys, and a fourth holder entered 58 ms after it)."),
	"laravel-funnel-3 pause":         laravelSlots("A holder paused past `releaseAfter` wakes inside its callback, which has no deadline to check, and writes after its slot expired and was taken by another client."),
	"symfony-shared extend":          sharedRefresh,
	"symfony-shared pause":           sharedKeys("A writer paused past its TTL wakes inside its section and writes after its lease expired and another writer took the key (in the run, a write lease of 200 ms taken at 3.851 s, its holder stopped until 4.202 s, wrote from 4.152 s while another writer, granted at 4.085 s, was in its section)."),
	"symfony-shared kill-everysec":   sharedKeys("A restart that lost the last second of writes (appendfsync everysec) can lose a lease granted in it while its holder runs on, and the next writer takes the key (in the run, a writer was granted at 4.111 s, after the node's restart at 3.82-3.96 s, while a reader granted at 3.789 s, just before the kill, was still in its section)."),
	"symfony-shared clock-jump":      sharedKeys("A jump of Redis's clock past the TTL makes the next script's `now` pass every score, and it drops the members (RedisStore.php:75, 123): the key is granted again while its holders run on (in the run, on lock:0, a writer granted at 6.754 s, the node's clock jumped 2 s at 6.937 s, and another writer was granted at 6.969 s)."),
	"symfony-shared partition":       sharedKeys("A partition that deposes the master splits the leases between two masters, each granting on its own; after the heal the deposed one follows the promoted one and its leases are gone while their holders run on (in the run, the deposed master granted 193 acquires, and a writer was granted at 11.959 s, after the heal at 10.9-11.2 s, while a writer granted during the partition, at 7.994 s with a 10 s TTL, was still in its section)."),
	"symfony-shared kill-none":       sharedKeys("A restart without persistence empties the key while its holders run on, and the next writer takes it (in the run, the node killed at 2.52 s and restarted empty, a writer was granted at 2.766 s while a reader granted at 2.192 s was still in its section)."),
	// At 3 permits.
	"symfony-semaphore-3 contention":   semaphoreSecond3,
	"symfony-semaphore-3 kill-always":  semaphoreSecond3,
	"symfony-semaphore-3 kill-delayed": semaphoreSecond3,
	// The reference lock breaks these by their fault; this lock broke
	// them by its whole seconds, apart from the fault (each run's
	// history, against its nemesis events).
	"symfony-semaphore-3 kill-none":     semaphoreSecondApart("kill-none: the fourth holder entered at 1.279 s, before the first restart (1.975 s)"),
	"symfony-semaphore-3 kill-everysec": semaphoreSecondApart("kill-everysec: the fourth holder entered at 3.638 s, 0.9 s after the node came back from its first kill with nothing unsynced (unsynced_at_kill 0), beside three leases all granted after that restart"),
	"symfony-semaphore-3 clock-jump":    semaphoreSecondApart("clock-jump: the fourth holder entered at 2.767 s, during a jump of Redis's clock that expired no key (expired_by_clock 0: the keys' EXPIREAT is 10 s past the last score, Store/RedisStore.php:91 at 5.4.53, and the scores are the clients' time(), not Redis's), 27 ms after the whole second that pruned a lease granted 838 ms before"),
	"symfony-semaphore-3 overrun":       semaphoreExpireAt3,
	"symfony-semaphore-3 overrun-free":  semaphoreExpireAt3,
	"symfony-semaphore-3 extend":        semaphoreExpireAt3,
	"symfony-semaphore-3 pause":         semaphoreExpireAt3,
	"symfony-semaphore-3 crash":         semaphoreExpireAt3,
	"symfony-semaphore-3 cut-off":       semaphoreExpireAt3,
	"symfony-semaphore-3 client-clock":  semaphoreExpireAt3,
	"symfony-semaphore-3 pause-redis":   semaphoreExpireAt3,
	"symfony-semaphore-3 lost-reply":    semaphoreExpireAt3,
	"symfony-semaphore-3 stall-quiet":   semaphoreExpireAt3,
	"rueidislock skew": {Text: "rueidislock computes each key's expiry on the client's clock and hands Redis an instant, not a duration: " +
		"`try` takes `now := time.Now()` and `deadline := now.Add(duration)` (rueidislock/lock.go:258, 265 at v1.0.79), the acquire sends `SET NX PXAT deadline` (`acqat`, lock.go:437, chosen at lock.go:171), " +
		"and each renewal sets `deadline = time.Now().Add(m.validity)` and sends `PEXPIREAT` (lock.go:279-280, `extend`, lock.go:435). " +
		"With Redis's clock ahead by s, a key set for the validity V lives V - s on Redis's clock and is gone at once when s >= V; the holder's context is cancelled only when a renewal or an invalidation finds the key lost, so the next client acquires while the holder is still in. " +
		"The holder's context is cancelled within a round trip of the next client's acquire, by the invalidation its SET sends (lock.go:283-296): the window is the holder's own until then. " +
		"`FallbackSETPX` (lock.go:168-169, `acqms`) sends a relative `SET NX PX` and passes the same run while holds are shorter than a renewal; renewals still use `PEXPIREAT` from the client's clock, and holds that outlast one break it too (TestRueidislock_ClockSkew, survey/golocks).",
		Documented: "no: the README and LockerOption document FallbackSETPX only as compatibility with Redis < 6.2, and say nothing of clocks",
		Depends:    skewDepends},
	"valkeylock skew": {Text: "valkeylock is rueidislock's fork with the same code: `now := time.Now()`, `deadline := now.Add(duration)` (valkeylock/lock.go:258, 265 at v1.0.79), `SET NX PXAT` (`acqat`, lock.go:437), renewals by `PEXPIREAT` of `time.Now().Add(m.validity)` (lock.go:279, 435).",
		Documented: "no: FallbackSETPX is documented as compatibility with Valkey < 6.2",
		Depends:    skewDepends},
}

// phpredis is the Redis client every PHP lock here runs on: Debian's
// php-redis.
const phpredis = "php-redis (phpredis) 5.3.7+4.3.0-3"

// clockQuorumFault is what clock-quorum does (nemesis/clock_quorum.go),
// for the Redlocks' entries there.
const clockQuorumFault = "The fault is Kleppmann's sequence (nemesis/clock_quorum.go): two of the five masters are down when the lease is taken, so it lands on a bare majority of three; half-way through the window the two come back empty and one node of that majority (not a majority) jumps its clock forward past the TTL. " +
	"Its keys expire at once, and another client wins a majority (the jumped node and the two that came back)"

// clockQuorumDepends and killQuorumDepends are what the Redlocks'
// breaks there depend on.
const (
	clockQuorumDepends = "a lease on a bare majority (two masters down when it was taken) and a forward jump past the TTL of one of its nodes; any TTL, at the library's defaults"
	killQuorumDepends  = "a lease on a bare majority (two masters down when it was taken) and a restart without persistence of one of its nodes before the TTL has passed; any TTL, at the library's defaults"
)

// skewDepends is what rueidislock's and valkeylock's skew breaks depend
// on.
const skewDepends = "Redis's clock ahead of the client's by more than the validity less the hold (here the run's 1 s TTL less 400 ms holds); SET NX PXAT is the library's default on Redis >= 6.2"

// goZeroRenewDoc is what go-zero documents of renewal.
const goZeroRenewDoc = "partly: go-zero's documentation (go-zero.dev, tutorials, Redis Lock) advertises the lock as \"can reenter, automatic renewal\", which is `AcquireCtx` again on the same `RedisLock`, as the adapter renews; it does not say that a renewal can take a key released or expired"

// phpredisDesync: phpredis keeps a connection whose EVAL reply timed
// out, and malkusch's spin loop goes on over it.
var phpredisDesync = Mechanism{Text: "phpredis 5.3.7 (Debian's php-redis, on which every PHP lock here runs) leaves a connection open when an EVAL's reply times out: `Redis::eval` reads its reply through `redis_read_reply_type`, which throws \"socket error on read socket\" and returns without closing the socket (library.c:3289-3302 at 5.3.7; redis.c:3156), " +
	"where a line read that times out closes it (`redis_sock_gets`, library.c:3253-3276); the reply, when it comes, is read by the next command. " +
	"malkusch's spin loop runs EVAL after each try that did not get the lock (`$this->release($key)`, classes/mutex/RedisMutex.php:92 at 2.2.1) and swallows its error (RedisMutex.php:127-135: a logged warning); `acquire()` returns false and the loop tries again over the same connection, now one reply behind. " +
	"Traced with MONITOR on the node against the history (pause-redis, seed 1): after a stall, one client's SET NX took the free key but read the previous EVAL's 0 as its reply, so its clean-up EVAL deleted the key it had just set and read that SET's OK; its next SET NX, refused by Redis, read the EVAL's 1: acquired, while another client held the key. " +
	"In stall-quiet the same shift shows both ways: a SET NX that took the key read as refused (a refusal with no holder, in the first battery that broke) or a refused one read as granted (two holders, in the survey's run). " +
	"`php examples/adapters/php/phpredis_desync.php` shows the shift alone against a redis-server of its own (exit 1; TestPhpredis_EvalTimeoutDesyncs).",
	Documented: "no: neither phpredis nor malkusch says that a connection whose read timed out must be dropped; phpredis #1222 (\"Read Timeout Exception leaves connection in a bad state\") reports the same desync after a read timeout",
	Depends:    "a read timeout shorter than the stall: the adapter gives phpredis a read timeout of 0.5 s (lockcheck's op timeout), where malkusch's README connects with phpredis's default, default_socket_timeout (60 s), under which a 1 s stall times out no read and leaves the connection in step (survey/demos/phpredis-default-timeout.php); at the library's default the mechanism needs a stall of a minute"}

// semaphoreSecond: Symfony Semaphore's expiry is the client's whole
// second plus the TTL (a TTL of whole seconds).
var semaphoreSecond = Mechanism{Text: "the semaphore's expiry is kept as a score of whole seconds: `RedisStore::save` passes the client's `time()` as `now` (Store/RedisStore.php:99 at 5.4.53), adds the member at `now + ttlInSecond` (:86), and every client's script first removes the members whose score is at most its own `time()` (:64); `putOffExpiration` does the same with `time() + ttl` (:142). " +
	"So a lease lives on Redis until the first script run at a whole second at or past `floor(t) + ttl`, not `t + ttl`: with a TTL of 1 s, a lease taken at 10.9 s is given to the next client at 11.0 s (in the contention run, a lease taken at .993 of a wall-clock second was granted again 37 ms later, at .030 of the next; in kill-delayed's, 296 ms after its grant, before any fault), while the holder's `Semaphore` computes its own expiry from `microtime(true) + ttl` (Key.php:88, isExpired :105) and holds on: its `getRemainingLifetime()` and `isExpired()` say it holds, and only `isAcquired()`, which asks Redis (Semaphore.php:133), says it does not once the next client's script has pruned it. " +
	"Every 1 s scenario breaks this way before its fault matters.",
	Documented: "no: the TTL is a float in seconds (`createSemaphore(..., ?float $ttlInSecond)`), with nothing said of whole seconds",
	Depends:    "a TTL of whole seconds (1 s in these scenarios) and a lease taken late in a wall-clock second: at any TTL a lease loses up to a second of its life, at the library's default TTL (300 s) too"}

// semaphoreExpireAt: Symfony Semaphore's scripts fail after their ZADD
// for a TTL that is not a whole number of seconds.
var semaphoreExpireAt = Mechanism{Text: "with a TTL that is not a whole number of seconds the semaphore is never acquired: `RedisStore::save`'s script adds the member at `now + ttlInSecond` (Store/RedisStore.php:86-87 at 5.4.53, `now` the client's `time()`, :99) and then sets the keys' expiry with `EXPIREAT weightKey maxExpiration + 10` (:91), which Redis refuses for a score that is not whole (\"ERR value is not an integer or out of range\"). " +
	"Redis does not undo a script's writes when it fails, so the member stays; phpredis's `eval` answers false, `save` throws SemaphoreAcquiringException (\"the script return false\", :106), and `acquire()` returns false (Semaphore.php:85-88). No `EXPIREAT` runs, so the members never expire on Redis either (the keys' TTL stays -1). With a new `Semaphore` for each try, as the adapter makes, every try fails: the first of each second at `EXPIREAT`, and the others refused by the member it left, which blocks the key to every other client until the first script run at the next whole second prunes it (Store/RedisStore.php:64, members scored at most its `time()`): refusals while nobody holds the key, which the lease contract forbids. " +
	"The same `Semaphore` tried again within the second is granted instead: its script finds its own member (\"Semaphore already acquired?\", :68-69) and answers true before `EXPIREAT`, a lease that ends on Redis at the next whole second while the holder's own expiry is its TTL from its call (the demonstration shows two holders so). " +
	"`refresh(ttl)` fails the same way (:136, after its `ZADD` at :124 moved the member's score) and throws SemaphoreExpiredException (:145-146). An earlier page put these breaks down to a lease that outlived its TTL until the next whole second; that is the mechanism of the 1 s scenarios only.",
	Documented: "no: the TTL is a float in seconds (`createSemaphore(..., ?float $ttlInSecond)`), with nothing said of whole seconds; a sub-second TTL fails the acquires of a new Semaphore with no error but false (the Semaphore's `evaluate` never reads phpredis's getLastError, Store/RedisStore.php:186-206)",
	Depends:    "a TTL that is not a whole number of seconds (these scenarios' 100-600 ms; the adapter passes lockcheck's TTL in seconds, as a float): the library's default TTL (300 s) is whole and does not show it"}

// semaphoreExpireAt3 and semaphoreSecond3 are semaphoreExpireAt and
// semaphoreSecond at 3 permits: the same lines, which the limit does not
// enter, so their demonstrations (at limit 1) are reused.
var (
	semaphoreExpireAt3 = Mechanism{Text: "symfony-semaphore's own at limit 1, at the same lines: the limit enters the save script only in its count check, `if count + weight > limit then return false end` (Store/RedisStore.php:81-83 at 5.4.53), which a first acquire passes; the script then adds the member at `now + ttlInSecond` (:86-87) and fails at `EXPIREAT weightKey maxExpiration + 10` (:91) for a TTL that is not whole seconds, its writes kept, and `acquire()` returns false (Semaphore.php:85-88). " +
		"At 3 permits the first three tries of a second each fail at `EXPIREAT` and leave a member, and the later ones are refused by the count check on those members until the next whole second prunes them (Store/RedisStore.php:64): every acquire is refused while fewer than 3 leases, or none, are held, which the semaphore's model forbids (lockcheck draws it as a refusal no timeline can place, or, where no acquire of the run was granted, as a run that exercised nothing). " +
		"The demonstration is limit 1's: its first step, a first acquire refused at `EXPIREAT` with nobody holding the key, runs the same lines whatever the limit.",
		Documented: semaphoreExpireAt.Documented, Depends: semaphoreExpireAt.Depends}
	semaphoreSecond3 = Mechanism{Text: "symfony-semaphore's own at limit 1, at the same lines: a member expires at a score of the client's `time()`, whole seconds, plus the TTL (Store/RedisStore.php:99, 86 at 5.4.53), and the next client's script prunes every member scored at most its own `time()` (:64) before its count check (:81-83), while the holder's `Semaphore` keeps its own expiry, `microtime(true) + ttl` (Key.php:88). " +
		"So with a 1 s TTL a lease taken late in a wall-clock second loses its permit at the next whole second, and a fourth client is granted it beside three holders (in kill-always's run, a lease granted 731 ms into the run, at .97 of a wall-clock second by the run's start time, lost its permit at the next whole second, and a fourth holder entered 444 ms after its grant, within its TTL). " +
		"The demonstration is limit 1's, which shows the permit granted again within the TTL; the limit enters only the count the pruned member no longer adds to.",
		Documented: semaphoreSecond.Documented, Depends: semaphoreSecond.Depends}
)

// semaphoreSecondApart is semaphoreSecond3 at a scenario whose fault
// breaks the reference lock, where the run shows the break apart from
// the fault (where: the scenario and what its history shows).
func semaphoreSecondApart(where string) Mechanism {
	m := semaphoreSecond3
	m.Text += " Not the fault's mechanism, which breaks the reference lock here: at " + where + "."
	return m
}

// laravelSlots is what breaks Laravel's funnel at the faults that break
// the reference lock: its slots are keys, as the reference lock's.
func laravelSlots(fault string) Mechanism {
	return Mechanism{Text: "the reference lock's, at the limiter's lines: each of the 3 slots is a key of its own, `KEY1`..`KEY3`, which the lock script takes when `mget` finds it empty, `redis.call('set', KEYS[index], ARGV[3], \"EX\", ARGV[2])` (Limiters/ConcurrencyLimiter.php:126-131 at 8.83.26), kept in one node's memory and expired on Redis's clock; " +
		"the callback, the lease, runs with no deadline and no token the resource could check (`block`, ConcurrencyLimiter.php:80-84), and the release deletes the slot only if it still holds the holder's id (ConcurrencyLimiter.php:158-163). " + fault,
		Documented: "no: the Debian package ships no documentation, and the limiter's docblocks say only that `releaseAfter` is \"the number of seconds a slot should be maintained\"",
		Depends:    "nothing of the adapter's settings: the scenario's fault breaks every lock without fencing, at any releaseAfter, at the library's defaults"}
}

// sharedRefresh: Symfony Lock's refresh revives an expired reader's
// lease while another reader keeps the key.
var sharedRefresh = Mechanism{Text: "a reader's refresh after its lease expired succeeds while another reader holds the key: `RedisStore::putOffExpiration` asks only whether the reader's member is in the key's sorted set, `if not redis.call(\"ZSCORE\", key, uniqueToken) then return false end` (Symfony/Component/Lock/Store/RedisStore.php:165-168 at 5.4.53), and drops no expired member first, where `save`, `saveRead` and `exists` do (RedisStore.php:75, 123, 241); then it moves the member's score, the lease's expiry on Redis's TIME, to `now + ttl` (RedisStore.php:170). " +
	"An expired member stays as long as the key does, and the key's `PEXPIREAT` is the highest score (RedisStore.php:134-135): another reader's lease keeps it. `Lock::refresh` resets the key's lifetime and asks the store (Lock.php:204-208), never whether the lease was still its own. " +
	"In the run (on lock:0, one of its violations), a read lease last extended at 6.156 s (300 ms) was extended again at 6.695 s, 240 ms after its expiry, while four other readers kept the key; no acquire had run on it since, so nothing had dropped the member. A lone reader's (or a writer's) key expires with its member, and its late refresh is refused.",
	Documented: "no: `LockInterface::refresh` is documented as \"Increase the duration of an acquired lock\", throwing LockConflictedException \"If the lock is acquired by someone else\" (LockInterface.php:36-44 at 5.4.53); nothing says that an expired read lease is revived",
	Depends:    "a read lease refreshed after its TTL while another reader's lease keeps the key, and no acquire on the key in between; any TTL, at the library's defaults"}

// sharedKeys is what breaks Symfony's shared lock at the faults that
// break the reference lock: its leases are kept as the reference lock's.
func sharedKeys(fault string) Mechanism {
	return Mechanism{Text: "the reference lock's, at the store's lines: a lease is a member of the key's sorted set scored with its expiry on Redis's TIME, a writer's `redis.call(\"ZADD\", key, now + ttl, uniqueToken)` with a `__write__` member beside it (Symfony/Component/Lock/Store/RedisStore.php:87-88 at 5.4.53), a reader's the same without (RedisStore.php:130), in one node's memory; " +
		"the holder's own deadline is its Key's, on its clock (Key.php:71-90), looked at only when it asks, and nothing reaches the resource to check. " + fault,
		Documented: "as the reference lock's: Symfony Lock's documentation (components/lock, Reliability) recommends delaying a restarted server's start by at least the longest lock TTL; a holder's own check is its lock's `isExpired()`, on its clock",
		Depends:    "nothing of the adapter's settings: the scenario's fault breaks every lock without fencing, at any TTL, at the library's defaults"}
}

// rueidisSwitch: a holder stops when its own client switches masters,
// not when another's does.
var rueidisSwitch = Mechanism{Text: "the lease lives in one master, as the reference lock's, and a promotion that lost the key (or a deposed master's grant) lets another client acquire it. rueidislock narrows the window without closing it: when a connection drops (its Sentinel client moving to the promoted master), rueidis calls `OnInvalidations(nil)` (pipe.go:513-518 at v1.0.79), and rueidislock's `onInvalidations` signals every held lock's monitoring goroutine (rueidislock/lock.go:214-229), which extends at once on the new connection (lock.go:283-288); the promoted master lacks the key or another holds it, the extend fails, and the holder's context is cancelled (lock.go:295-296). " +
	"So a holder stops when its own client switches masters. With one process per client, as in production and in this survey since the master-moving scenarios run so, each client switches on its own Sentinel event: a holder whose client has not yet switched goes on writing while another, already on the promoted master, acquires. With one client for all holders (one process) the same switch cancels every holder as it sends the next acquires over, and the scenario passes.",
	Documented: "no: the README says the context is cancelled when the lock is lost, not that this waits for the holder's own connection to fail",
	Depends:    "one process per client, each with a rueidis client of its own, as in production: with one process for all holders the same switch cancels every holder and the scenario passes; any TTL, at the library's defaults"}

// valkeySwitch: rueidisSwitch in the fork, at the same lines.
var valkeySwitch = Mechanism{Text: "valkeylock is rueidislock's fork with the same code at the same lines (valkey-go pipe.go:513-518, valkeylock/lock.go:214-229, 283-288, 295-296 at v1.0.79): " + rueidisSwitch.Text,
	Documented: rueidisSwitch.Documented, Depends: rueidisSwitch.Depends}

// InProcess are the flags that select lib in lockcheck's process where
// it can be (Lock: the skew sweep, the bench), else as it is verified.
func (lib Library) InProcess() []string {
	if lib.Lock != "" {
		return []string{"--lock", lib.Lock}
	}
	return lib.Flags
}

// rueidisPause: a holder woken from a pause has no deadline to check.
var rueidisPause = Mechanism{Text: "the lock is a context with no deadline: `tryonce` makes it with `context.WithCancel` (rueidislock/lock.go:371 at v1.0.79) and only the monitoring goroutines cancel it, when a renewal fails (lock.go:272-296): an invalidation makes them renew at once rather than cancel (lock.go:283-288), and only a failed renewal cancels (lock.go:295-296). " +
	"A holder whose whole process stopped (pause-holder, one process per client) for longer than KeyValidity wakes with its keys expired and maybe taken, and runs on before the library's goroutines, waking too, send the renewal that fails: it writes while another holds the lock. " +
	"A lease lock lets the holder check its deadline on waking (lockcheck's setnx passes the same scenario); a context without one cannot be checked. " +
	"On waking the holder races the library's goroutines, which cancel its context within a round trip (0.2-5 ms in the demonstration): a holder that writes at once wins about half the rounds on a 2-core machine. " +
	"The overlap lockcheck drew runs from the other client's write to the end of the holder's section, and that section includes the whole freeze of the lock process: lockcheck's client, in lockcheck's own process, counts as in its section while the library is stopped. A real holder frozen with its library writes nothing during the freeze; it writes on from its waking until the failed renewal cancels its context, a part of the figure the history does not separate.",
	Documented: "no",
	Depends:    "a stop of the whole process (the library's goroutines with the holder) longer than KeyValidity (the run's TTL here; rueidislock's default 5 s), at any validity"}

// toozHeart: tooz renews from a heartbeat thread and tells no holder
// when it cannot.
var toozHeart = Mechanism{Text: "tooz renews every held lock from the coordinator's heartbeat thread: `Heart._beat_forever_until_stopped` calls the driver's `heartbeat` under tenacity's retry, every second while it fails (tooz/coordination.py:182-207 in Debian's 3.1.0), " +
	"and `RedisDriver.heartbeat` renews each lock with redis-py's `reacquire`, logging and swallowing a lock's failure (`LOG.warning(\"Unable to heartbeat lock ...\")`, tooz/drivers/redis.py:536-548; `RedisLock.heartbeat`, :129-135). " +
	"No callback, exception or flag reaches the holder: while Redis is down or stalled its key runs out (lock_timeout, whole seconds: redis.py:368-369), the next client acquires once Redis is back, and the holder, told nothing, goes on writing.",
	Documented: "no: tooz documents heartbeats as needed to keep locks, not what a holder learns when they fail. It offers `Lock.is_still_owner()` (tooz/locking.py:59 in Debian's 3.1.0; the Redis driver's, tooz/drivers/redis.py:93), which asks Redis whether the lock is still the holder's: a holder that asks it after a stall learns the lock was lost (survey/demos/tooz-heartbeat.py). The survey's adapter never calls it, so these entries judge a holder that does not ask",
	Depends:    "no setting of the adapter's but lock_timeout (the run's TTL in whole seconds, rounded up; tooz's default 30 s): a Redis outage or stall longer than lock_timeout, at any lock_timeout"}
