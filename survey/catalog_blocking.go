package survey

// Blocking is the shape of a lock whose acquire waits inside the lock
// (--wait): a mutex whose waiters are judged too, by the wake-up bound
// the lock declares (DESIGN.md, Blocking waits; issue 64). Its table
// comes after the shapes beyond the mutex.
const Blocking Kind = "blocking"

func init() {
	Kinds = append(Kinds, struct {
		Kind  Kind
		Title string
	}{Blocking, "Blocking waits: who wakes its waiters"})
	kindIntro[Blocking] = "Each lock driven with its own blocking acquire, every acquire waiting up to 2 s inside the lock (`--wait 2s`), judged as a mutex and by its waiters: a waiter is starved when, for longer than the wake-up bound its lock declares (its poll interval, twice over), its key certainly had no holder while it waited, outside every fault's window but drop-unlock's (the starved-waiter check, DESIGN.md, Blocking waits), which breaks the lease contract. redis-py's granted waits say when their winning try was sent (its adapter times each SET: tried_ms) and are judged; Laravel's say nothing, so only their refused waits are. setnx-block is lockcheck's own polling lock, for reference.\n\n"
	Libraries = append(Libraries, blockingLibraries...)
}

// blockingLibraries are the blocking table's rows: lockcheck's own
// polling lock, and each library whose adapter waits with the library's
// own blocking acquire (examples/adapters: redis-py's acquire(blocking,
// blocking_timeout), Laravel's block(), the funnel's block()->then()).
// Symfony's acquire(true) waits with no bound, and tooz's leases are
// scopes, whose waiters are not judged: neither is here. Each battery
// has 10 minutes: a blocking acquire's runs are longer, and a scenario
// short of its figure under load runs again while its share lasts.
var blockingLibraries = []Library{
	{Name: "setnx-block", Language: "Go (reference)", Package: "lockcheck's own", Version: "-", Kind: Blocking, Flags: []string{"--lock", "setnx-block", "--wait", "2s", "--budget", "10m"},
		Shape: "setnx whose acquire waits: SET NX PX tried every 25 ms under one token until it takes the key or the wait runs out; declares a wake-up bound of 1 s"},
	{Name: "redis-py-wait", Language: "Python", Package: "python3-redis (redis-py)", Version: "4.3.4-3", Kind: Blocking,
		Flags: []string{"--lock-cmd", "examples/adapters/redispy/lock.py", "--wait", "2s", "--name", "redis-py-wait", "--budget", "10m"},
		Shape: "redis.lock.Lock as the redis-py row drives it, its acquire blocking: acquire(blocking=True, blocking_timeout=wait, token), which tries SET NX PX and sleeps its sleep (0.1 s) between tries; the adapter declares a wake-up bound of twice that (200 ms); one process, a thread per request"},
	{Name: "laravel-wait", Language: "PHP", Client: phpredis, Package: "php-illuminate-cache (Laravel cache lock) with php-illuminate-redis", Version: "8.83.26+dfsg-2", Kind: Blocking,
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib laravel", "--lock-cmd-per-client", "--lock-no-extend", "--wait", "2s", "--name", "laravel-wait", "--budget", "10m"},
		Shape: "the laravel row's lock, its acquire blocking: $lock->block($seconds), which tries get() and sleeps 250 ms between tries for whole seconds of time(); the adapter declares a wake-up bound of twice the sleep (500 ms); no extend; one PHP process per client"},
	{Name: "laravel-funnel-wait", Language: "PHP", Client: phpredis, Package: "php-illuminate-redis (Laravel's concurrency limiter, ConcurrencyLimiter)", Version: "8.83.26+dfsg-2", Kind: Blocking,
		Flags: []string{"--lock-cmd", "examples/adapters/php/lock.php --lib laravel-funnel", "--lock-cmd-per-client", "--lock-no-extend", "--wait", "2s", "--name", "laravel-funnel-wait", "--budget", "10m"},
		Shape: "the laravel-funnel row's limiter of one slot, its acquire blocking: funnel(key)->limit(1)->releaseAfter(seconds)->block($seconds)->then(callback), which tries its script and sleeps 250 ms between tries; the adapter declares a wake-up bound of 500 ms; the release reports no outcome (indeterminate); no extend; one PHP process per client"},
}
