package survey

// Cite is one file:line the page cites, checked against the pinned code
// by TestCites_HoldAtPinnedVersion: the lines Lines of File, read in
// Lib at its pinned version, hold Quote (verbatim once runs of white
// space are collapsed to one space, on both sides).
//
// Lib names the code: a Go module of survey/go.mod (its version is
// go.mod's, and a Library whose Package is in that module pins the
// same), or a Debian package (its version is the Version of the Library
// whose Package names it, PhpredisVersion for php-redis). File is the
// path inside it: inside the module for Go; under /usr/share/php for the
// PHP packages and under /usr/lib/python3/dist-packages for tooz, as
// installed; inside the unpacked source package for php-redis (its C
// source, which Debian does not install).
type Cite struct {
	Lib, File string
	// Lines are the first and the last line, 1-based.
	Lines [2]int
	Quote string
	// Was is what a text cites where the lines it names did not hold at
	// the pinned version ("60-81", "86"); Lines are then the true ones.
	// "" where the text is right.
	Was string
}

// PhpredisVersion is the php-redis the survey's PHP locks run on
// (Debian's, bookworm): its C source is read from Debian's source
// package at this version.
const PhpredisVersion = "5.3.7+4.3.0-3"

// The code the page cites.
const (
	srcGoZero       = "github.com/zeromicro/go-zero"
	srcGoRedis      = "github.com/redis/go-redis/v9"
	srcRedsync      = "github.com/go-redsync/redsync/v4"
	srcRueidis      = "github.com/redis/rueidis"
	srcValkeyGo     = "github.com/valkey-io/valkey-go"
	srcMalkusch     = "php-malkusch-lock"
	srcSfLock       = "php-symfony-lock"
	srcSfSem        = "php-symfony-semaphore"
	srcLaravelRedis = "php-illuminate-redis"
	srcTooz         = "python3-tooz"
	srcPhpredis     = "php-redis"
)

// Cites are every file:line in the texts of Mechanisms, Other and
// Corrections, once each (a line cited by several texts is one Cite),
// and the lines the texts are to cite next.
var Cites = []Cite{
	// go-zero (Other, and its Mechanisms).
	{srcGoZero, "core/breaker/breaker.go", [2]int{268, 268}, "reasons := make([]string, 0, ew.count)", ""},
	{srcGoZero, "core/breaker/breaker.go", [2]int{263, 263}, "ew.count = min(ew.count+1, numHistoryReasons)", ""},
	{srcGoZero, "core/breaker/breaker.go", [2]int{246, 246}, "lt.errWin))", ""},
	{srcGoZero, "core/stores/redis/breakerhook.go", [2]int{24, 33}, "return h.brk.DoWithAcceptableCtx(ctx, func() error { return next(ctx, cmd) }, acceptable)", ""},
	{srcGoZero, "core/stores/redis/redis.go", [2]int{2762, 2763}, "return err == nil || errorx.In(err, red.Nil, context.Canceled)", ""},
	{srcGoZero, "core/breaker/googlebreaker.go", [2]int{53, 60}, "dropRatio := (float64(history.total-protection) - weightedAccepts) / float64(history.total+1)", ""},
	{srcGoZero, "core/breaker/googlebreaker.go", [2]int{94, 95}, "if err := b.accept(); err != nil { b.markDrop()", ""},
	{srcGoZero, "core/breaker/bucket.go", [2]int{35, 38}, "func (b *bucket) drop() { b.Sum++ b.Drop++ }", ""},
	{srcGoZero, "core/stores/redis/redislock.go", [2]int{89, 93}, "resp, err := rl.store.ScriptRunCtx(ctx, delScript, []string{rl.key}, []string{rl.id}) if err != nil { return false, err }", ""},
	{srcGoZero, "core/stores/redis/redislock.go", [2]int{60, 81}, "resp, err := rl.store.ScriptRunCtx(ctx, lockScript, []string{rl.key}, []string{ rl.id,", ""},
	{srcGoZero, "core/stores/redis/redislock.go", [2]int{89, 100}, "return reply == 1, nil", ""},
	{srcGoZero, "core/stores/redis/lockscript.lua", [2]int{1, 3}, `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])`, ""},
	{srcGoZero, "core/stores/redis/lockscript.lua", [2]int{5, 5}, `return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, ""},
	{srcGoZero, "core/stores/redis/lockscript.lua", [2]int{1, 5}, `redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return "OK" else return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, ""},
	{srcGoZero, "core/stores/redis/delscript.lua", [2]int{1, 5}, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0`, ""},
	{srcGoZero, "core/stores/redis/redisclientmanager.go", [2]int{14, 14}, "maxRetries = 3", ""},
	{srcGoZero, "core/stores/redis/redisclientmanager.go", [2]int{37, 37}, "MaxRetries: maxRetries,", ""},

	// go-redis, under go-zero.
	{srcGoRedis, "script.go", [2]int{193, 199}, "r := s.EvalSha(ctx, c, keys, args...) if isNoScriptErr(r.Err()) { return s.Eval(ctx, c, keys, args...) }", ""},
	{srcGoRedis, "redis.go", [2]int{1593, 1593}, "for attempt := startAttempt; attempt <= maxRetries; attempt++ {", ""},
	{srcGoRedis, "error.go", [2]int{90, 90}, "if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {", ""},

	// redsync.
	{srcRedsync, "redsync.go", [2]int{40, 40}, "quorum: len(r.pools)/2 + 1,", ""},
	{srcRedsync, "mutex.go", [2]int{116, 116}, "if n >= m.quorum && now.Before(until) {", ""},
	{srcRedsync, "mutex.go", [2]int{175, 194}, "func (m *Mutex) ValidContext(ctx context.Context) (bool, error) { n, err := m.actOnPoolsAsync(func(pool redis.Pool) (bool, error) { return m.valid(ctx, pool) }) return n >= m.quorum, err", ""},
	{srcRedsync, "mutex.go", [2]int{115, 115}, "until := now.Add(m.expiry - now.Sub(start) - time.Duration(int64(float64(m.expiry)*m.driftFactor)))", ""},

	// rueidislock.
	{srcRueidis, "rueidislock/lock.go", [2]int{258, 258}, "now := time.Now()", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{265, 265}, "deadline := now.Add(duration)", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{437, 437}, "acqat = rueidis.NewLuaScriptRetryable(`local r = redis.call(\"SET\",KEYS[1],ARGV[1],\"NX\",\"PXAT\",ARGV[2])", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{171, 171}, "resp = acqat.Exec(ctx, m.client, []string{key}, []string{val, strconv.FormatInt(deadline.UnixMilli(), 10)})", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{279, 280}, "deadline = time.Now().Add(m.validity) if err = m.script(ctx, extend, key, val, deadline); err == nil {", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{435, 435}, "extend = rueidis.NewLuaScriptRetryable(`if redis.call(\"GET\",KEYS[1]) == ARGV[1] then local r = redis.call(\"PEXPIREAT\",KEYS[1],ARGV[2])", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{168, 169}, "if m.setpx { resp = acqms.Exec(ctx, m.client, []string{key}, []string{val, strconv.FormatInt(duration.Milliseconds(), 10)})", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{214, 229}, "func (m *locker) onInvalidations(messages []rueidis.RedisMessage) { if messages == nil {", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{283, 288}, "case _, ok := <-csc: if !ok { err = ErrLockerClosed } else { err = m.script(ctx, extend, key, val, deadline) }", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{295, 296}, "if released := atomic.AddInt32(&released, 1); released >= m.majority { cancel()", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{283, 296}, "if released := atomic.AddInt32(&released, 1); released >= m.majority { cancel()", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{371, 371}, "ctx, cancel := context.WithCancel(ctx)", ""},
	{srcRueidis, "rueidislock/lock.go", [2]int{272, 296}, "monitoring := func(err error, key string, deadline time.Time, csc chan struct{}) {", ""},
	{srcRueidis, "pipe.go", [2]int{513, 518}, "if p.onInvalidations != nil { p.onInvalidations(nil) }", ""},

	// valkeylock, rueidislock's fork.
	{srcValkeyGo, "valkeylock/lock.go", [2]int{258, 258}, "now := time.Now()", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{265, 265}, "deadline := now.Add(duration)", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{437, 437}, "acqat = valkey.NewLuaScriptRetryable(`local r = redis.call(\"SET\",KEYS[1],ARGV[1],\"NX\",\"PXAT\",ARGV[2])", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{279, 279}, "deadline = time.Now().Add(m.validity)", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{435, 435}, "extend = valkey.NewLuaScriptRetryable(`if redis.call(\"GET\",KEYS[1]) == ARGV[1] then local r = redis.call(\"PEXPIREAT\",KEYS[1],ARGV[2])", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{214, 229}, "func (m *locker) onInvalidations(messages []valkey.ValkeyMessage) { if messages == nil {", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{283, 288}, "case _, ok := <-csc: if !ok { err = ErrLockerClosed } else { err = m.script(ctx, extend, key, val, deadline) }", ""},
	{srcValkeyGo, "valkeylock/lock.go", [2]int{295, 296}, "if released := atomic.AddInt32(&released, 1); released >= m.majority { cancel()", ""},
	{srcValkeyGo, "pipe.go", [2]int{513, 518}, "if p.onInvalidations != nil { p.onInvalidations(nil) }", ""},

	// malkusch/lock.
	{srcMalkusch, "Malkusch/Lock/classes/mutex/RedisMutex.php", [2]int{84, 84}, "$isAcquired = $this->isMajority($acquired) && $elapsedTime <= $expire;", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/RedisMutex.php", [2]int{148, 150}, "private function isMajority(int $count): bool { return $count > count($this->redisAPIs) / 2;", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/RedisMutex.php", [2]int{92, 92}, "$this->release($key);", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/RedisMutex.php", [2]int{127, 135}, "} catch (LockReleaseException $e) {", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/SpinlockMutex.php", [2]int{80, 84}, "if ($elapsed_time > $this->timeout) { throw ExecutionOutsideLockException::create($elapsed_time, $this->timeout);", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/SpinlockMutex.php", [2]int{81, 84}, "if ($elapsed_time > $this->timeout) { throw ExecutionOutsideLockException::create($elapsed_time, $this->timeout); }", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/SpinlockMutex.php", [2]int{73, 73}, "if ($this->acquire($this->key, $this->timeout + 1)) {", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/SpinlockMutex.php", [2]int{66, 73}, "The expiration time for the lock is increased by one second", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/SpinlockMutex.php", [2]int{50, 50}, "@param int $timeout The time in seconds a lock expires, default is 3.", ""},
	{srcMalkusch, "Malkusch/Lock/classes/mutex/PHPRedisMutex.php", [2]int{55, 55}, "return $redisAPI->set($key, $value, ['nx', 'ex' => $expire]);", ""},

	// Symfony Lock.
	{srcSfLock, "Symfony/Component/Lock/Store/CombinedStore.php", [2]int{60, 91}, "if ($this->strategy->isMet($successCount, $storesCount)) { return; }", ""},
	{srcSfLock, "Symfony/Component/Lock/Strategy/ConsensusStrategy.php", [2]int{24, 26}, "return $numberOfSuccess > ($numberOfItems / 2);", ""},
	{srcSfLock, "Symfony/Component/Lock/Store/CombinedStore.php", [2]int{135, 172}, "$store->putOffExpiration($key, $adjustedTtl);", ""},
	{srcSfLock, "Symfony/Component/Lock/Store/CombinedStore.php", [2]int{171, 171}, "$this->delete($key);", ""},
	{srcSfLock, "Symfony/Component/Lock/Lock.php", [2]int{218, 221}, "} catch (LockConflictedException $e) { $this->dirty = false;", ""},
	// Symfony Lock's shared lock (RedisStore).
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{87, 88}, `redis.call("ZADD", key, now + ttl, uniqueToken) redis.call("ZADD", key, now + ttl, "__write__")`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{130, 130}, `redis.call("ZADD", key, now + ttl, uniqueToken)`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{165, 168}, `if not redis.call("ZSCORE", key, uniqueToken) then return false end`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{75, 75}, `redis.call("ZREMRANGEBYSCORE", key, "-inf", now)`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{123, 123}, `redis.call("ZREMRANGEBYSCORE", key, "-inf", now)`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{241, 241}, `redis.call("ZREMRANGEBYSCORE", key, "-inf", now)`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{170, 170}, `redis.call("ZADD", key, now + ttl, uniqueToken)`, ""},
	{srcSfLock, "Symfony/Component/Lock/Store/RedisStore.php", [2]int{134, 135}, `local maxExpiration = redis.call("ZREVRANGE", key, 0, 0, "WITHSCORES")[2] redis.call("PEXPIREAT", key, maxExpiration)`, ""},
	{srcSfLock, "Symfony/Component/Lock/LockInterface.php", [2]int{36, 44}, "Increase the duration of an acquired lock.", ""},
	{srcSfLock, "Symfony/Component/Lock/Lock.php", [2]int{204, 208}, "$this->key->resetLifetime(); $this->store->putOffExpiration($this->key, $ttl); $this->dirty = true; if ($this->key->isExpired()) {", ""},
	{srcSfLock, "Symfony/Component/Lock/Key.php", [2]int{71, 90}, "$newTime = microtime(true) + $ttl;", ""},

	// Laravel's concurrency limiter (funnel).
	{srcLaravelRedis, "Illuminate/Redis/Limiters/ConcurrencyLimiter.php", [2]int{126, 131}, `for index, value in pairs(redis.call('mget', unpack(KEYS))) do if not value then redis.call('set', KEYS[index], ARGV[3], "EX", ARGV[2]) return ARGV[1]..index end end`, ""},
	{srcLaravelRedis, "Illuminate/Redis/Limiters/ConcurrencyLimiter.php", [2]int{80, 84}, "if (is_callable($callback)) { try { return tap($callback(), function () use ($slot, $id) { $this->release($slot, $id); });", ""},
	{srcLaravelRedis, "Illuminate/Redis/Limiters/ConcurrencyLimiter.php", [2]int{158, 163}, "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", ""},
	// Symfony Semaphore.
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{99, 99}, "time(),", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{86, 86}, `redis.call("ZADD", timeKey, now + ttlInSecond, identifier)`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{64, 64}, `redis.call("ZREMRANGEBYSCORE", timeKey, "-inf", now)`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{142, 142}, "[time() + $ttlInSecond, $this->getUniqueToken($key)]", ""},
	// save's EXPIREAT of a fractional score (ERR value is not an integer),
	// and refresh's (putOffExpiration's script).
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{91, 91}, `redis.call("EXPIREAT", weightKey, maxExpiration + 10)`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{136, 136}, `redis.call("EXPIREAT", weightKey, maxExpiration + 10)`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{86, 87}, `redis.call("ZADD", timeKey, now + ttlInSecond, identifier) redis.call("ZADD", weightKey, weight, identifier)`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{81, 83}, "if count + weight > limit then return false end", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{106, 106}, "throw new SemaphoreAcquiringException($key, 'the script return false');", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{68, 69}, `if redis.call("ZSCORE", timeKey, identifier) then return true`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{124, 124}, `local added = redis.call("ZADD", timeKey, ARGV[1], ARGV[2])`, ""},
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{145, 146}, "if (false === $ret) { throw new SemaphoreExpiredException($key, 'the script returns false');", ""},
	// evaluate: phpredis's eval, whose false is the answer (no getLastError).
	{srcSfSem, "Symfony/Component/Semaphore/Store/RedisStore.php", [2]int{186, 206}, "return $this->redis->eval($script, array_merge([$resource], $args), 1);", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Semaphore.php", [2]int{85, 88}, "} catch (SemaphoreAcquiringException $e) {", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Semaphore.php", [2]int{133, 133}, "return $this->dirty = $this->store->exists($this->key);", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Key.php", [2]int{88, 88}, "$newTime = microtime(true) + $ttlInSeconds;", ""},
	{srcSfSem, "Symfony/Component/Semaphore/Key.php", [2]int{105, 105}, "return null !== $this->expiringTime && $this->expiringTime <= microtime(true);", ""},

	// tooz.
	{srcTooz, "tooz/coordination.py", [2]int{182, 207}, "wait=tenacity.wait_fixed(1),", ""},
	{srcTooz, "tooz/drivers/redis.py", [2]int{536, 548}, `except tooz.ToozError: LOG.warning("Unable to heartbeat lock '%s'", lock, exc_info=True)`, ""},
	{srcTooz, "tooz/drivers/redis.py", [2]int{129, 135}, "def heartbeat(self): with self._exclusive_access: if self.acquired: self._lock.reacquire()", ""},
	{srcTooz, "tooz/drivers/redis.py", [2]int{368, 369}, "lock_timeout = self._options.get('lock_timeout', self.timeout) self.lock_timeout = int(lock_timeout)", ""},
	// What tooz offers a holder: Lock.is_still_owner, and the Redis
	// driver's (RedisLock.is_still_owner).
	{srcTooz, "tooz/locking.py", [2]int{59, 59}, "def is_still_owner(self):", ""},
	{srcTooz, "tooz/drivers/redis.py", [2]int{93, 93}, "def is_still_owner(self):", ""},

	// phpredis's C source (Debian's source package, upstream 5.3.7).
	{srcPhpredis, "redis-5.3.7/library.c", [2]int{3289, 3302}, `if((*reply_type = php_stream_getc(redis_sock->stream)) == EOF) { REDIS_THROW_EXCEPTION( "socket error on read socket", 0); return -1;`, ""},
	{srcPhpredis, "redis-5.3.7/redis.c", [2]int{3156, 3156}, `REDIS_PROCESS_KW_CMD("EVAL", redis_eval_cmd, redis_read_raw_variant_reply);`, ""},
	{srcPhpredis, "redis-5.3.7/library.c", [2]int{3253, 3276}, "// Close our socket redis_sock_disconnect(redis_sock, 1);", ""},
}
