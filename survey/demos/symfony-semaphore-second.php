#!/usr/bin/php
<?php
// symfony-semaphore-second.php shows, against a redis-server of its own,
// what breaks Symfony Semaphore with a TTL of whole seconds (the
// survey's symfony-semaphore contention, kill-always, kill-delayed and
// kill-extend, whose TTL is 1 s): the lease's expiry on Redis is the
// client's time(), whole seconds, plus the TTL, so a lease taken late in
// a wall-clock second is given to the next client just after the next
// whole second, while the first holder's Semaphore still counts its TTL
// from microtime(true).
//
//   php survey/demos/symfony-semaphore-second.php
//
// Library: Symfony Semaphore, Debian's php-symfony-semaphore
// 5.4.53+dfsg-0+deb12u1, its RedisStore on phpredis (php-redis
// 5.3.7+4.3.0-3), used as its documentation shows: a \Redis connected
// with connect(host, port), new RedisStore($redis), new
// SemaphoreFactory($store), createSemaphore($resource, 1, 1, 1.0),
// acquire(), isAcquired(), getRemainingLifetime(), isExpired(),
// release(). No departure from it (lockcheck's adapter connects with a
// read timeout; nothing here depends on one).
//
// The lines it rests on (/usr/share/php/Symfony/Component/Semaphore):
//   Store/RedisStore.php:99   the script's `now` is the client's time()
//   Store/RedisStore.php:86   ZADD timeKey (now + ttlInSecond) identifier
//   Store/RedisStore.php:64-65  each script first drops the members whose
//                             score is at most its own time(): the lease
//                             ends at the first script run at a whole
//                             second at or past floor(t) + ttl
//   Store/RedisStore.php:142  putOffExpiration passes time() + ttl the
//                             same way (a refresh ends the same way)
//   Semaphore.php:79, Key.php:88  the holder's expiry is
//                             microtime(true) + ttl, taken after the
//                             script returned; isExpired (Key.php:105)
//                             and getRemainingLifetime (Key.php:100)
//                             compare it with microtime(true)
//   Semaphore.php:133, Store/RedisStore.php:178  isAcquired() asks Redis
//                             (ZSCORE weightKey): after the next client's
//                             script dropped the member, it says false
//
// It waits until microtime(true) is past .9 of a second, acquires with a
// 1 s TTL, then has a second client (its own connection and Semaphore)
// try every few milliseconds. Exit 1 when the second is granted before
// the first's TTL has run (the first's getRemainingLifetime() > 0,
// isExpired() false), 0 when not, 2 when it could not run. The server is
// stopped, by its PID, in every case.

declare(strict_types=1);

use Symfony\Component\Semaphore\SemaphoreFactory;
use Symfony\Component\Semaphore\Store\RedisStore;

require __DIR__ . '/redis_server.php';

// frac is the fraction of the wall-clock second at t.
function frac(float $t): float
{
    return fmod($t, 1.0);
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-semaphore', '/usr/share/php/Symfony/Component/Semaphore/autoload.php');
    $port = Servers::freePort();
    $srv->start($port);
    $a = connect($port);
    $b = connect($port);
    $factoryA = new SemaphoreFactory(new RedisStore($a));
    $factoryB = new SemaphoreFactory(new RedisStore($b));

    // A grant late in a second: a busy machine that delays it into the
    // next second has it tried again.
    for ($try = 1;; $try++) {
        while (frac(microtime(true)) < 0.9 || frac(microtime(true)) > 0.97) {
            usleep(2000);
        }
        $res = "pdf-invoice$try";
        $semA = $factoryA->createSemaphore($res, 1, 1, 1.0);
        $t0 = microtime(true);
        $gotA = $semA->acquire();
        $tA = microtime(true);
        if ($gotA && (floor($tA) === floor($t0) || $try === 6)) {
            break;
        }
        if ($gotA) {
            $semA->release();
        }
        if ($try === 6) {
            echo "the first acquire was refused\n";
            return 0;
        }
    }
    $score = array_values($a->zRange('{' . $res . '}:time', 0, -1, true))[0] ?? null;
    $semB = $factoryB->createSemaphore($res, 1, 1, 1.0);
    for ($n = 0; !($gotB = $semB->acquire()) && microtime(true) < $tA + 2.0; $n++) {
        usleep(2000);
    }
    $tB = microtime(true);
    $lifeA = $semA->getRemainingLifetime();
    $expiredA = $semA->isExpired();
    $acquiredA = $semA->isAcquired();
    printf("first client: createSemaphore('%s', 1, 1, 1.0)->acquire() granted at %.3f (.%03d of its second), its member's score %s (time() + 1)\n",
        $res, $tA, (int) (frac($tA) * 1000), var_export($score, true));
    printf("second client, trying every 2 ms: granted %s at %.3f (.%03d of the next second), %d ms after the first, %d refusals before\n",
        var_export($gotB, true), $tB, (int) (frac($tB) * 1000), (int) round(($tB - $tA) * 1000), $n);
    printf("the first's Semaphore then: getRemainingLifetime() %.3f s, isExpired() %s, isAcquired() %s (it asks Redis)\n",
        $lifeA, var_export($expiredA, true), var_export($acquiredA, true));
    $shown = $gotB && $tB < $tA + 1.0 && $lifeA > 0 && !$expiredA;
    echo $shown ? "granted twice within the TTL: the lease ended on Redis at the next whole second\n" : "not shown\n";
    return $shown ? 1 : 0;
}

runDemo(main(...));
