#!/usr/bin/php
<?php
// PHP lock libraries, unmodified, as lockcheck lock processes: one
// process per client, as PHP runs (lockcheck verify --lock-cmd
// "examples/adapters/php/lock.php --lib L" --lock-cmd-per-client).
//
// It speaks lockcheck's JSON-lines protocol (docs/own-lock.md): a request
// per line on stdin, its reply on stdout. A PHP process serves one
// request at a time, as a PHP worker does.
//
//   --lib symfony   Symfony Lock (php-symfony-lock): LockFactory over a
//                   RedisStore; acquire(false), refresh($ttl), release().
//   --lib laravel   Laravel's cache lock (php-illuminate-cache) on a
//                   phpredis connection (php-illuminate-redis): RedisLock
//                   get() without a callback, release(). Its TTL is whole
//                   seconds (EX): lockcheck's TTL is rounded up, and the
//                   ping's reply says so (ttl_round_ms). It has no extend
//                   (verify --lock-no-extend).
//   --lib symfony-redlock  Symfony Lock's CombinedStore over a RedisStore
//                   per master with the ConsensusStrategy (its Redlock),
//                   on topology redlock (verify --lock-topology redlock).
//                   acquire(false) says false both when a majority
//                   refused and when the votes split (CombinedStore
//                   deletes what it set either way): the reply is undone,
//                   as lockcheck's own Redlocks record such an attempt.
//   --lib malkusch  malkusch/lock (php-malkusch-lock): PHPRedisMutex,
//                   whose only API is synchronized(callback). Each
//                   acquire runs synchronized() in a Fiber that suspends
//                   inside the callback: the lease is held while it is
//                   suspended, and its release resumes it, the callback
//                   returns and the library unlocks. Requests come in any
//                   order (a late acquire's give-back after the next
//                   acquire). Its key is
//                   "lock_"+name, set NX EX timeout+1 (whole seconds),
//                   and its lock() spins up to timeout seconds: timeout is
//                   the TTL asked for, rounded up to whole seconds, and
//                   the ping says the TTL rule (round to 1000, add 1000).
//                   One node. No extend (verify --lock-no-extend); one
//                   process per client.
//   --lib symfony-semaphore  Symfony Semaphore (php-symfony-semaphore)
//                   over its RedisStore, a semaphore's sorted sets in
//                   place of a key: SemaphoreFactory's
//                   createSemaphore(key, k, 1, ttl), acquire(),
//                   refresh($ttl), release(), with k the acquire's
//                   "permits" (--permits; 1 without it, a mutex). The
//                   ping says "shape":"semaphore". Its expiry is the
//                   client's time() (whole seconds) plus the TTL, kept as
//                   a score and compared with the next client's time();
//                   its script fails on a TTL that is not whole seconds.
//   --lib laravel-funnel  Laravel's concurrency limiter
//                   (php-illuminate-redis), as its documentation shows
//                   it: funnel(key)->limit(k)->releaseAfter(seconds)
//                   ->block(0)->then(callback, failure), with k the
//                   acquire's "permits" (--permits; 1 without it). The
//                   ping says "shape":"semaphore". Its only API runs a
//                   callback under the lock, so, as malkusch's, the lease
//                   is the callback's run suspended in a Fiber until its
//                   release. Its slots are keys "key1".."keyk", each set
//                   EX releaseAfter (whole seconds, rounded up), and its
//                   release reports no outcome. No extend (verify
//                   --lock-no-extend).
//   --lib symfony-shared  Symfony Lock's shared (read-write) lock over a
//                   RedisStore (a SharedLockStoreInterface): createLock
//                   (key, ttl, false), then acquireRead(false) for an
//                   acquire with "access":"read" and acquire(false) for
//                   "write" (or none), refresh($ttl), release(). The ping
//                   says "shape":"rwlock", without writer preference: its
//                   saveRead refuses a reader only while a writer's
//                   "__write__" member is in the key's sorted set, never
//                   for a write acquire in flight.
//   --lib malkusch-redlock  the same mutex over every master (topology
//                   redlock), as its README's RedLock: a lock() that
//                   timed out is undone (each try that failed released
//                   what it had set; the library does not say why).
//
// Blocking waits (lockcheck --wait), laravel and laravel-funnel: the
// ping's reply declares "wake_bound_ms", twice the library's poll
// interval (250 ms: wakeBoundMs), so each acquire carries "wait_ms" and is the library's own
// blocking acquire: laravel's $lock->block($seconds), the funnel's
// ->block($seconds)->then(). Both count the wait in whole seconds of
// time() (see waitSeconds). Without wait_ms an acquire is one try, as
// before. No tried_ms: neither says when the try that took the key was
// sent. Symfony's acquire(true) blocks with no bound, so it has none.
// --wake-bound-ms MS declares MS in place of 500 (a wrong bound, for
// lockcheck's own tests only).
//
// On topology redlock each acquire connects to every master afresh, as a
// PHP request does, and its lease keeps those connections.
//
// Each library is used as its documentation shows; nothing of it is
// changed. Debian's packages are what `make survey` installs.

declare(strict_types=1);

require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

function fail(string $msg): void
{
    fwrite(STDERR, "lock.php: $msg\n");
    exit(2);
}

// opTimeout is lockcheck's op timeout, in seconds.
function opTimeout(): float
{
    return ((int) (getenv('LOCKCHECK_OP_TIMEOUT_MS') ?: 2000)) / 1000.0;
}

// dial connects to one node, with lockcheck's op timeout and password,
// at the address LOCKCHECK_DIAL_MAP gives for the one announced (a
// Sentinel names the master at the address its replicas use).
function dial(string $host, int $port): \Redis
{
    foreach (array_filter(explode(',', getenv('LOCKCHECK_DIAL_MAP') ?: '')) as $pair) {
        [$from, $to] = explode('=', $pair, 2);
        if ($from === "$host:$port") {
            [$host, $port] = explode(':', $to);
            $port = (int) $port;
            break;
        }
    }
    $password = getenv('LOCKCHECK_REDIS_PASSWORD') ?: null;
    $user = getenv('LOCKCHECK_REDIS_USER') ?: null;
    $r = new \Redis();
    $r->connect($host, $port, opTimeout(), null, 0, opTimeout());
    if ($password !== null) {
        $r->auth($user !== null ? [$user, $password] : $password);
    }
    return $r;
}

// sentinel is a client of one Sentinel, on either phpredis: 6 takes an
// array of options, 5.3 (Debian 12's 5.3.7) the host, port and timeouts
// only: its constructor has six parameters and no password (read with
// ReflectionClass), so Sentinels with a password need phpredis 6.
function sentinel(string $host, int $port, float $timeout): \RedisSentinel
{
    $auth = getenv('LOCKCHECK_SENTINEL_PASSWORD') ?: null;
    if (version_compare(phpversion('redis'), '6.0.0', '>=')) {
        $opts = ['host' => $host, 'port' => $port, 'connectTimeout' => $timeout, 'readTimeout' => $timeout];
        return new \RedisSentinel($auth !== null ? $opts + ['auth' => $auth] : $opts);
    }
    if ($auth !== null) {
        throw new \LogicException('Sentinels with a password need phpredis 6 (this is ' . phpversion('redis') . ', whose RedisSentinel takes no password)');
    }
    return new \RedisSentinel($host, $port, $timeout, null, 0, $timeout);
}

// connect reaches the Redis lockcheck started: its node, or the master
// its Sentinels name.
function connect(): \Redis
{
    $timeout = opTimeout();
    if (getenv('LOCKCHECK_TOPOLOGY') === 'sentinel') {
        $addr = null;
        foreach (explode(',', getenv('LOCKCHECK_SENTINELS')) as $s) {
            [$host, $port] = explode(':', $s);
            try {
                $m = sentinel($host, (int) $port, $timeout)->getMasterAddrByName(getenv('LOCKCHECK_MASTER_NAME'));
                if ($m) {
                    $addr = $m;
                    break;
                }
            } catch (\RedisException $e) {
            }
        }
        if ($addr === null) {
            throw new \RedisException('no sentinel named a master');
        }
        [$host, $port] = $addr;
    } else {
        [$host, $port] = explode(':', explode(',', getenv('LOCKCHECK_REDIS_ADDRS'))[0]);
    }
    return dial($host, (int) $port);
}

// connectAll reaches every master of topology redlock. A master that is
// down is kept as an unconnected client: the library counts its error
// as a vote not cast.
function connectAll(): array
{
    $all = [];
    foreach (explode(',', getenv('LOCKCHECK_REDIS_ADDRS')) as $a) {
        [$host, $port] = explode(':', $a);
        try {
            $all[] = dial($host, (int) $port);
        } catch (\RedisException $e) {
            $all[] = new \Redis();
        }
    }
    return $all;
}

// POLL_MS is how long Laravel's blocking acquires sleep between tries:
// Illuminate\Cache\Lock::block's usleep of $sleepMilliseconds, 250
// (Cache/Lock.php:40, 117), and ConcurrencyLimiter::block's usleep(250 *
// 1000) (Redis/Limiters/ConcurrencyLimiter.php:77). A waiter sleeps at
// most that (plus a try's round trip) on a free key.
const POLL_MS = 250;

// wakeBoundMs is the bound the ping declares: twice POLL_MS (the sleep,
// and as long again for a try's round trip and a sleep overshot on a
// loaded machine: a lost wake-up sleeps far longer), unless
// --wake-bound-ms says otherwise (lockcheck's own tests).
function wakeBoundMs(): int
{
    // getopt stops at the first argument it does not know: ask for all.
    $o = getopt('', ['lib:', 'wake-bound-ms:']);
    return isset($o['wake-bound-ms']) ? (int) $o['wake-bound-ms'] : 2 * POLL_MS;
}

// waitSeconds is an acquire's wait_ms as the whole seconds Laravel's
// block() takes, 0 without one (a single try). Both blocks start from
// the current second, truncated (Cache/Lock.php:114, Carbon's
// getTimestamp; ConcurrencyLimiter.php:68, time()) and give up once
// that many whole seconds have ticked (Lock.php:119,
// ConcurrencyLimiter.php:73): a wait of S seconds that starts f into a
// second ends after S - f, up to 1 s early (and the Cache lock's check
// follows its sleep, so up to 250 ms late), never past the wait's last
// try by more than a poll. A wait that is not whole seconds would be
// rounded up by that comparison, and end up to a second past the wait
// lockcheck asked for: the run is refused instead (run with --wait in
// whole seconds).
function waitSeconds(array $req): int
{
    $ms = (int) ($req['wait_ms'] ?? 0);
    if ($ms % 1000 !== 0) {
        fail("--wait {$ms}ms: Laravel's block() waits whole seconds; run with --wait in whole seconds (1s, 2s, ...)");
    }
    return intdiv($ms, 1000);
}

// emit writes one reply line.
function emit(array $reply): void
{
    fwrite(STDOUT, json_encode($reply) . "\n");
    fflush(STDOUT);
}

// request reads the next request, or null at the end of stdin.
function request(): ?array
{
    $line = fgets(STDIN);
    if ($line === false) {
        return null;
    }
    $req = json_decode($line, true);
    if (!is_array($req) || !isset($req['id'])) {
        fail('not a request: ' . trim($line));
    }
    return $req;
}

// Server keeps the connection (made again after an error: a failover
// moves the master) and the leases it granted, by token.
final class Server
{
    private ?\Redis $redis = null;
    private array $leases = [];

    public function __construct(public readonly string $lib)
    {
    }

    private function redis(): \Redis
    {
        return $this->redis ??= connect();
    }

    public function serve(array $req): array
    {
        $reply = ['id' => $req['id']];
        if (str_starts_with($this->lib, 'malkusch')) {
            return (new Malkusch($this))->serve($req);
        }
        if ($this->lib === 'laravel-funnel') {
            return Funnel::serve($req);
        }
        try {
            switch ($req['op']) {
                case 'ping':
                    $reply['ok'] = (bool) $this->redis()->ping();
                    if ($this->lib === 'laravel') {
                        $reply['ttl_round_ms'] = 1000; // EX: whole seconds, rounded up
                        $reply['wake_bound_ms'] = wakeBoundMs(); // block()'s poll
                    }
                    if ($this->lib === 'symfony-semaphore') {
                        $reply['shape'] = 'semaphore'; // each acquire's "permits" is its limit
                    }
                    if ($this->lib === 'symfony-shared') {
                        $reply['shape'] = 'rwlock'; // no writer preference: see saveRead
                    }
                    break;
                case 'acquire':
                    $token = $this->acquire($req);
                    if ($token === false) {
                        $reply['undone'] = true;
                        break;
                    }
                    $reply['ok'] = $token !== null;
                    if ($token !== null) {
                        $reply['token'] = $token;
                    }
                    break;
                case 'release':
                    $ok = $this->release($req['token']);
                    if ($ok === null) {
                        // Indeterminate for the lease model: Symfony does
                        // not say whether the lease was still its own. But
                        // it returned: its script ran by now (an error
                        // would have thrown, and the connection is made
                        // again after one), so no info horizon.
                        $reply['error'] = "Symfony's release() reports no outcome (RedisStore::delete ignores its script's answer)";
                        $reply['answered'] = true;
                    } else {
                        $reply['ok'] = $ok;
                    }
                    break;
                case 'extend':
                    $reply['ok'] = $this->extend($req['token'], $req['ttl_ms'] / 1000.0);
                    break;
                default:
                    $reply['error'] = 'unknown op ' . $req['op'];
            }
        } catch (\Symfony\Component\Lock\Exception\LockConflictedException | \Symfony\Component\Semaphore\Exception\SemaphoreExpiredException $e) {
            $reply['ok'] = false; // definite: another holds it, or the lease is gone
        } catch (\Throwable $e) {
            // The outcome is unknown (a timeout, a lost connection, a
            // lease the library found expired on its own clock).
            $this->redis = null;
            $reply['error'] = get_class($e) . ': ' . $e->getMessage() . ($e->getPrevious() ? ' (' . $e->getPrevious()->getMessage() . ')' : '');
        }
        return $reply;
    }

    // acquire returns the lease's token, null if refused, false if undone.
    private function acquire(array $req): string|false|null
    {
        $key = $req['key'];
        $ttl = $req['ttl_ms'] / 1000.0;
        $token = bin2hex(random_bytes(16));
        switch ($this->lib) {
            case 'symfony-redlock':
                $stores = array_map(fn (\Redis $r) => new \Symfony\Component\Lock\Store\RedisStore($r, $ttl), connectAll());
                $store = new \Symfony\Component\Lock\Store\CombinedStore($stores, new \Symfony\Component\Lock\Strategy\ConsensusStrategy());
                $lock = (new \Symfony\Component\Lock\LockFactory($store))->createLock($key, $ttl, false);
                if (!$lock->acquire(false)) {
                    return false; // undone: refused or split, it does not say
                }
                $this->leases[$token] = $lock;
                return $token;
            case 'symfony':
                $factory = new \Symfony\Component\Lock\LockFactory(new \Symfony\Component\Lock\Store\RedisStore($this->redis(), $ttl));
                $lock = $factory->createLock($key, $ttl, false);
                break;
            case 'symfony-shared':
                $factory = new \Symfony\Component\Lock\LockFactory(new \Symfony\Component\Lock\Store\RedisStore($this->redis(), $ttl));
                $lock = $factory->createLock($key, $ttl, false);
                if (!(($req['access'] ?? 'write') === 'read' ? $lock->acquireRead(false) : $lock->acquire(false))) {
                    return null;
                }
                $this->leases[$token] = $lock;
                return $token;
            case 'symfony-semaphore':
                $factory = new \Symfony\Component\Semaphore\SemaphoreFactory(new \Symfony\Component\Semaphore\Store\RedisStore($this->redis()));
                $lock = $factory->createSemaphore($key, (int) ($req['permits'] ?? 1), 1, $ttl, false);
                break;
            case 'laravel':
                $conn = new \Illuminate\Redis\Connections\PhpRedisConnection($this->redis());
                $lock = new \Illuminate\Cache\PhpRedisLock($conn, $key, (int) ceil($ttl), $token);
                break;
        }
        if ($this->lib === 'laravel' && ($wait = waitSeconds($req)) > 0) {
            try {
                $lock->block($wait); // true, or it throws once the wait ran out
            } catch (\Illuminate\Contracts\Cache\LockTimeoutException $e) {
                return null;
            }
        } elseif (!$lock->{$this->lib === 'laravel' ? 'get' : 'acquire'}()) {
            return null;
        }
        $this->leases[$token] = $lock;
        return $token;
    }

    // release is the lease's release: whether it was still held, or
    // null where the library does not say (Symfony).
    private function release(string $token): ?bool
    {
        $lock = $this->leases[$token] ?? null;
        unset($this->leases[$token]);
        if ($lock === null) {
            return false;
        }
        // Symfony's release() says nothing of whether the lease was
        // still ours (it throws only if the key is still held by it
        // afterwards); Laravel's returns whether it deleted it.
        $r = $lock->release();
        return $this->lib === 'laravel' ? (bool) $r : null;
    }

    private function extend(string $token, float $ttl): bool
    {
        $lock = $this->leases[$token] ?? null;
        if ($lock === null) {
            return false;
        }
        if (!str_starts_with($this->lib, 'symfony')) {
            throw new \LogicException($this->lib . ' has no extend');
        }
        $lock->refresh($ttl);
        return true;
    }
}

// Malkusch serves malkusch/lock's PHPRedisMutex. Its synchronized()
// runs a callback under the lock; the lease is the callback's run,
// suspended in a Fiber until its release.
final class Malkusch
{
    private static ?array $redises = null;
    // held are the leases held, by token: each its synchronized() call,
    // suspended inside the callback in a Fiber, and its logger.
    private static array $held = [];

    public function __construct(private Server $srv)
    {
    }

    public function serve(array $req): array
    {
        $reply = ['id' => $req['id']];
        try {
            switch ($req['op']) {
                case 'ping':
                    foreach (self::redises() as $r) {
                        $r->ping();
                    }
                    // EX timeout+1, timeout the TTL in whole seconds;
                    // lock() spins for timeout seconds on a taken key.
                    return $reply + ['ok' => true, 'ttl_round_ms' => 1000, 'ttl_add_ms' => 1000, 'acquire_waits_ttl' => true];
                case 'acquire':
                    return $reply + $this->hold($req);
                case 'release':
                    return $reply + $this->unhold($req['token'] ?? '');
                case 'extend':
                    return $reply + ['error' => 'malkusch/lock has no extend'];
                default:
                    return $reply + ['error' => 'unknown op ' . $req['op']];
            }
        } catch (\Throwable $e) {
            self::$redises = null;
            return $reply + ['error' => get_class($e) . ': ' . $e->getMessage()];
        }
    }

    private static function redises(): array
    {
        return self::$redises ??= [connect()];
    }

    // hold acquires through synchronized(), run in a Fiber that suspends
    // inside the callback: the lease is held while it is suspended, and
    // the process goes on serving requests, in whatever order they come.
    private function hold(array $acq): array
    {
        $token = bin2hex(random_bytes(16));
        $timeout = max(1, (int) ceil($acq['ttl_ms'] / 1000));
        $redlock = $this->srv->lib === 'malkusch-redlock';
        $mutex = new \malkusch\lock\mutex\PHPRedisMutex($redlock ? connectAll() : self::redises(), $acq['key'], $timeout);
        // malkusch logs a Redis error of one master as a warning and
        // counts it as a vote not cast: a release that failed on an error
        // did not say whether the lease was still held.
        // (A class made here: PSR's logger loads with malkusch.)
        $log = new class extends \Psr\Log\AbstractLogger {
            public int $warnings = 0;

            public function log($level, $message, array $context = array())
            {
                $this->warnings++;
            }
        };
        $mutex->setLogger($log);
        $fiber = new \Fiber(function () use ($mutex): void {
            $mutex->synchronized(function (): void {
                \Fiber::suspend(); // held until resumed by the release
            });
        });
        try {
            $fiber->start();
        } catch (\malkusch\lock\exception\TimeoutException $e) {
            // Every try for timeout seconds failed: on one node, the key
            // was taken; over several masters, taken or split, and each
            // try gave back what it set.
            return $redlock ? ['undone' => true] : ['ok' => false];
        }
        self::$held[$token] = [$fiber, $log];
        return ['ok' => true, 'token' => $token];
    }

    // unhold resumes the lease's synchronized() call: its callback
    // returns and the library unlocks.
    private function unhold(string $token): array
    {
        [$fiber, $log] = self::$held[$token] ?? [null, null];
        unset(self::$held[$token]);
        if ($fiber === null) {
            return ['ok' => false];
        }
        $log->warnings = 0;
        try {
            $fiber->resume();
            return ['ok' => true];
        } catch (\malkusch\lock\exception\ExecutionOutsideLockException $e) {
            // The callback outran timeout: malkusch sends no release and
            // throws; the key (timeout+1 s) lapses by itself.
            return ['error' => 'ExecutionOutsideLockException: ' . $e->getMessage()];
        } catch (\malkusch\lock\exception\LockReleaseException $e) {
            // No majority deleted the key: definite when every master
            // answered (the key was not ours), unknown after an error.
            return $log->warnings > 0 ? ['error' => 'LockReleaseException after a Redis error: ' . $e->getMessage()] : ['ok' => false];
        }
    }
}

// Funnel serves Laravel's concurrency limiter, its limit the acquire's
// permits (1 without --permits: one slot, a mutex). Its only
// API runs a callback under the lock: the lease is the callback's run,
// suspended in a Fiber until its release resumes it; the callback then
// returns and the limiter deletes its slot (if it still holds its id).
final class Funnel
{
    private static ?\Illuminate\Redis\Connections\PhpRedisConnection $conn = null;
    private static array $held = []; // fibers, by token

    public static function serve(array $req): array
    {
        $reply = ['id' => $req['id']];
        try {
            switch ($req['op']) {
                case 'ping':
                    self::conn()->ping();
                    // EX, whole seconds; each acquire's "permits" is its limit.
                    // block()'s poll is its wake-up bound.
                    return $reply + ['ok' => true, 'ttl_round_ms' => 1000, 'shape' => 'semaphore', 'wake_bound_ms' => wakeBoundMs()];
                case 'acquire':
                    return $reply + self::hold($req['key'], max(1, (int) ceil($req['ttl_ms'] / 1000)), (int) ($req['permits'] ?? 1), waitSeconds($req));
                case 'release':
                    $fiber = self::$held[$req['token'] ?? ''] ?? null;
                    unset(self::$held[$req['token'] ?? '']);
                    if ($fiber === null) {
                        return $reply + ['ok' => false];
                    }
                    $fiber->resume();
                    // Indeterminate for the lease model: the limiter does
                    // not say whether its slot was still its own. It
                    // returned, so its script ran by now (an error throws,
                    // and the connection is made again after one).
                    return $reply + ['error' => "Laravel's funnel reports no outcome of a release (ConcurrencyLimiter::release ignores its script's answer)", 'answered' => true];
                default:
                    return $reply + ['error' => 'unknown op ' . $req['op'] . ' (the funnel has no extend)'];
            }
        } catch (\Throwable $e) {
            self::$conn = null;
            return $reply + ['error' => get_class($e) . ': ' . $e->getMessage()];
        }
    }

    private static function conn(): \Illuminate\Redis\Connections\PhpRedisConnection
    {
        return self::$conn ??= new \Illuminate\Redis\Connections\PhpRedisConnection(connect());
    }

    // hold tries the slot for $wait seconds (block(0): once; a refusal
    // is its timeout) and, if it got it, keeps the callback suspended.
    private static function hold(string $key, int $seconds, int $permits, int $wait): array
    {
        $refused = false;
        $fiber = new \Fiber(function () use ($key, $seconds, $permits, $wait, &$refused): void {
            self::conn()->funnel($key)->limit($permits)->releaseAfter($seconds)->block($wait)->then(
                fn () => \Fiber::suspend(),
                function () use (&$refused): void {
                    $refused = true;
                }
            );
        });
        $fiber->start();
        if ($refused || !$fiber->isSuspended()) {
            return ['ok' => false];
        }
        $token = bin2hex(random_bytes(16));
        self::$held[$token] = $fiber;
        return ['ok' => true, 'token' => $token];
    }
}

$opts = getopt('', ['lib:', 'wake-bound-ms:']);
$lib = $opts['lib'] ?? '';
$libs = ['symfony', 'symfony-redlock', 'symfony-shared', 'symfony-semaphore', 'laravel', 'laravel-funnel', 'malkusch', 'malkusch-redlock'];
if (!in_array($lib, $libs, true)) {
    fail('--lib ' . implode(', ', $libs));
}
if (str_starts_with($lib, 'malkusch')) {
    $a = '/usr/share/php/Malkusch/Lock/autoload.php';
    if (!is_file($a)) {
        fail("$a is missing: apt-get install php-malkusch-lock");
    }
    require_once $a;
}
if ($lib === 'symfony-semaphore') {
    $a = '/usr/share/php/Symfony/Component/Semaphore/autoload.php';
    if (!is_file($a)) {
        fail("$a is missing: apt-get install php-symfony-semaphore");
    }
    require_once $a;
}
if (str_starts_with($lib, 'laravel')) {
    foreach (['/usr/share/php/Illuminate/Cache/autoload.php', '/usr/share/php/Illuminate/Redis/autoload.php'] as $a) {
        if (!is_file($a)) {
            fail("$a is missing: apt-get install php-illuminate-cache php-illuminate-redis");
        }
        require_once $a;
    }
}
$srv = new Server($lib);
while (($req = request()) !== null) {
    emit($srv->serve($req));
}
