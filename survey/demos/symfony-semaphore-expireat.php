#!/usr/bin/php
<?php
// symfony-semaphore-expireat.php shows, against a redis-server of its
// own, what breaks Symfony Semaphore with a TTL that is not a whole
// number of seconds (the survey's symfony-semaphore overrun,
// overrun-free, extend, pause, crash, cut-off, pause-redis, lost-reply
// and stall-quiet, whose TTLs are 100-600 ms): its save script fails
// after its first writes, which stay.
//
//   php survey/demos/symfony-semaphore-expireat.php
//
// Library: Symfony Semaphore, Debian's php-symfony-semaphore
// 5.4.53+dfsg-0+deb12u1, its RedisStore on phpredis (php-redis
// 5.3.7+4.3.0-3), used as its documentation shows: a \Redis connected
// with connect(host, port), new RedisStore($redis), new
// SemaphoreFactory($store), createSemaphore($resource, $limit, 1, $ttl),
// acquire(), refresh($ttl), release(). No departure from it (lockcheck's
// adapter, examples/adapters/php/lock.php, connects with a read timeout;
// nothing here depends on one).
//
// The lines it rests on (/usr/share/php/Symfony/Component/Semaphore):
//   Store/RedisStore.php:99   the script's `now` is the client's time()
//   Store/RedisStore.php:86   ZADD timeKey (now + ttlInSecond) identifier,
//                             :87 ZADD weightKey weight identifier
//   Store/RedisStore.php:90-91  maxExpiration = ZREVRANGE timeKey 0 0
//                             WITHSCORES, EXPIREAT weightKey
//                             maxExpiration + 10: with now + 0.5 the
//                             score is not an integer, and EXPIREAT
//                             answers "ERR value is not an integer or out
//                             of range" (user_script:39). Redis does not
//                             undo a script's writes on an error: both
//                             ZADDs stay, and no EXPIREAT ever ran.
//   Store/RedisStore.php:105-106  phpredis's eval answers false on a
//                             script error (it does not throw), and
//                             save() throws SemaphoreAcquiringException,
//                             which Semaphore::acquire turns into `false`
//                             (Semaphore.php:85-88): a refusal.
//   Store/RedisStore.php:64-65, 73-82  the next script drops members
//                             whose score is at most its time(), then
//                             refuses when the weights sum past the
//                             limit: the phantom member blocks the key
//                             until the next whole second.
//   Store/RedisStore.php:68-69  "Semaphore already acquired?": the same
//                             Semaphore tried again within that second
//                             finds its own phantom and returns true
//                             before the EXPIREAT, a lease that ends on
//                             Redis at the next whole second, while its
//                             Key says microtime(true) + 0.5 (Key.php:88).
//   Store/RedisStore.php:124, 131, 136  putOffExpiration ZADDs
//                             time() + ttl and fails at the same EXPIREAT
//                             (user_script:18); eval's false makes it
//                             throw SemaphoreExpiredException (:145-146),
//                             which Semaphore::refresh passes on
//                             (Semaphore.php:116-120) after resetLifetime
//                             (:109): getRemainingLifetime() is then null,
//                             and the member's score is now time() + 0.5.
//
// It acquires with a 0.5 s TTL (refused, the script's error, the members
// left behind), has another client ask for the key with the default TTL
// (300 s) while nobody holds it (refused, no script error), acquires
// with the survey's TTLs (0.1, 0.2, 0.3, 0.6 s) and 1.5 s, tries the
// 0.5 s acquire for 2 s more with a new Semaphore each time, as a PHP
// request (and lockcheck's adapter) makes one (refused every time), has
// the other client take the key once a whole second has passed, tries
// one Semaphore twice in a second (false, then true) while another
// client retries until it is granted, and last takes a lease with a 5 s
// TTL and refreshes it with 0.5 s (SemaphoreExpiredException). Exit 1
// when the EXPIREAT failure, the phantom's refusal, the refresh's
// failure and the same-Semaphore retry show, 0 when any does not, 2 when
// it could not run. The server is stopped, by its PID, in every case.

declare(strict_types=1);

use Symfony\Component\Semaphore\SemaphoreFactory;
use Symfony\Component\Semaphore\Store\RedisStore;

require __DIR__ . '/redis_server.php';

// members is a sorted set's members as "token…=score", tokens cut short.
function members(Redis $r, string $key): string
{
    $out = [];
    foreach ($r->zRange($key, 0, -1, true) as $m => $score) {
        $out[] = substr((string) $m, 0, 6) . '…=' . $score;
    }
    return '[' . implode(', ', $out) . ']';
}

// startOfSecond waits until microtime(true) is early in a whole second.
function startOfSecond(): void
{
    while (fmod(microtime(true), 1.0) > 0.2) {
        usleep(10000);
    }
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-semaphore', '/usr/share/php/Symfony/Component/Semaphore/autoload.php');
    $port = Servers::freePort();
    $srv->start($port);

    $a = connect($port); // the first client
    $b = connect($port); // another client
    $factoryA = new SemaphoreFactory(new RedisStore($a));
    $factoryB = new SemaphoreFactory(new RedisStore($b));
    $shown = true;

    // The acquire with a 0.5 s TTL and the other client's, in one second
    // of time() (the steps take milliseconds; a second that rolls over
    // between them, on a busy machine, is tried again on another key).
    for ($try = 1;; $try++) {
        $res = "invoice$try";
        startOfSecond();
        $semA = $factoryA->createSemaphore($res, 1, 1, 0.5);
        $a->clearLastError();
        $secA = time();
        try {
            $gotA = $semA->acquire();
            $howA = 'returned ' . var_export($gotA, true);
        } catch (Throwable $e) {
            $gotA = null;
            $howA = 'threw ' . get_class($e) . ': ' . $e->getMessage();
        }
        $errA = $a->getLastError();
        $phantom = count($a->zRange('{' . $res . '}:time', 0, -1)) === 1 && count($a->zRange('{' . $res . '}:weight', 0, -1)) === 1;
        $left = members($a, '{' . $res . '}:time') . ' in {' . $res . '}:time, ' . members($a, '{' . $res . '}:weight') . ' in :weight, TTL ' . $a->ttl('{' . $res . '}:time') . '/' . $a->ttl('{' . $res . '}:weight');
        $semB = $factoryB->createSemaphore($res, 1); // the default TTL, 300 s
        $b->clearLastError();
        $gotB = $semB->acquire();
        $secB = time();
        $errB = $b->getLastError();
        if ($secB === $secA || $try === 3) {
            break;
        }
        echo "(the second rolled over between the two acquires: again)\n";
    }
    printf("createSemaphore('%s', 1, 1, 0.5)->acquire() at %.3f %s; the script's error: %s\n", $res, microtime(true), $howA, $errA ?? 'none');
    printf("left behind: %s (-1: no expiry)\n", $left);
    printf("another client's createSemaphore('%s', 1)->acquire() (TTL 300 s), nobody holding, in the same second: %s (script error: %s)\n", $res, var_export($gotB, true), $errB ?? 'none');
    $shown = $shown && $gotA === false && $errA !== null && str_contains($errA, 'not an integer or out of range')
        && $phantom && $secB === $secA && $gotB === false && $errB === null;

    // The survey's sub-second TTLs (overrun's 100 ms to cut-off's 600 ms)
    // and 1.5 s, each on a key of its own.
    $sweep = [];
    foreach ([0.1, 0.2, 0.3, 0.6, 1.5] as $ttl) {
        $a->clearLastError();
        $got = $factoryA->createSemaphore("ttl$ttl", 1, 1, $ttl)->acquire();
        $sweep[] = sprintf('%s s %s%s', $ttl, var_export($got, true), $a->getLastError() !== null && str_contains($a->getLastError(), 'not an integer') ? ' (EXPIREAT error)' : '');
        $shown = $shown && $got === false && $a->getLastError() !== null;
    }
    printf("acquire() with the TTLs %s\n", implode(', ', $sweep));

    // Every try fails, each with a Semaphore of its own (as a PHP
    // request makes one, and lockcheck's adapter does per acquire): the
    // first of each second at EXPIREAT, the others on the phantom.
    $tries = [];
    for ($until = time() + 2; time() < $until;) {
        $a->clearLastError();
        $tries[] = var_export($factoryA->createSemaphore($res, 1, 1, 0.5)->acquire(), true) . ($a->getLastError() !== null ? ' (EXPIREAT error)' : ' (refused by a phantom)');
        usleep(200000);
    }
    $lastTry = time();
    $counts = array_count_values($tries);
    printf("%d more 0.5 s acquires over 2 s, a new Semaphore each: %s\n", count($tries), implode(', ', array_map(fn ($k, $n) => "$n × $k", array_keys($counts), $counts)));
    $shown = $shown && !isset($counts['true (EXPIREAT error)']) && !isset($counts['true (refused by a phantom)']) && isset($counts['false (EXPIREAT error)']);

    // The phantoms go at the next whole second: the other client gets in.
    while (time() <= $lastTry) {
        usleep(10000);
    }
    $gotB2 = $semB->acquire();
    printf("the other client's acquire at %.3f, in the second after the last 0.5 s try: %s\n", microtime(true), var_export($gotB2, true));
    $shown = $shown && $gotB2 === true;
    $semB->release();

    // The same Semaphore tried again in the same second finds its own
    // phantom ("Semaphore already acquired?", RedisStore.php:68-69) and
    // is granted, a lease that ends on Redis at the next whole second.
    for ($try = 1;; $try++) {
        while (($f = fmod(microtime(true), 1.0)) < 0.6 || $f > 0.75) {
            usleep(5000);
        }
        $semD = $factoryA->createSemaphore("slot$try", 1, 1, 0.5);
        $secD = time();
        $d1 = $semD->acquire();
        $d2 = $semD->acquire();
        $tD = microtime(true);
        if (time() === $secD || $try === 3) {
            break;
        }
    }
    $leftD = members($a, "{slot$try}:time");
    $semE = $factoryB->createSemaphore("slot$try", 1, 1, 0.5); // another client, retrying
    for ($n = 0; !($gotE = $semE->acquire()) && $n < 400; $n++) {
        usleep(5000);
    }
    $tE = microtime(true);
    $lifeD = $semD->getRemainingLifetime();
    printf("the same Semaphore tried twice at %.3f: %s, then %s (its own phantom: %s); another client's, retried, granted at %.3f (%s, after %d refusals) while the first's getRemainingLifetime() is %.3f s%s\n",
        $tD, var_export($d1, true), var_export($d2, true), $leftD, $tE, var_export($gotE, true), $n, $lifeD, $gotE && $lifeD > 0 ? ' (two holders)' : '');
    $shown = $shown && $d1 === false && $d2 === true;

    // refresh(0.5) of a lease taken with a 5 s TTL.
    $semC = $factoryA->createSemaphore('report', 1, 1, 5.0);
    $gotC = $semC->acquire();
    $a->clearLastError();
    try {
        $semC->refresh(0.5);
        $howC = 'returned';
    } catch (Throwable $e) {
        $howC = 'threw ' . get_class($e) . ': ' . $e->getMessage();
    }
    $errC = $a->getLastError();
    printf("createSemaphore('report', 1, 1, 5.0)->acquire(): %s; refresh(0.5) at time() %d %s; the script's error: %s; {report}:time now %s; getRemainingLifetime() %s, isAcquired() %s\n",
        var_export($gotC, true), time(), $howC, $errC ?? 'none', members($a, '{report}:time'), var_export($semC->getRemainingLifetime(), true), var_export($semC->isAcquired(), true));
    $shown = $shown && $gotC === true && str_contains($howC, 'SemaphoreExpiredException') && $errC !== null && str_contains($errC, 'not an integer or out of range');

    echo $shown ? "a TTL that is not whole seconds fails at EXPIREAT after the ZADDs stay: a first try is refused, the key refused to others with nobody holding it, and a retry of the same Semaphore granted its phantom\n" : "not shown\n";
    return $shown ? 1 : 0;
}

runDemo(main(...));
