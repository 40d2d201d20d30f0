#!/usr/bin/php
<?php
// symfony-shared-refresh.php shows, against a redis-server of its own,
// what breaks Symfony Lock's shared lock at the survey's symfony-shared
// extend: a reader's refresh() after its lease expired succeeds while
// another reader holds the key, so the expired lease lives again.
//
//   php survey/demos/symfony-shared-refresh.php
//
// Library: Symfony Lock, Debian's php-symfony-lock 5.4.53+dfsg-0+deb12u1,
// its RedisStore on phpredis (php-redis 5.3.7+4.3.0-3), used as its
// documentation shows a shared lock: a \Redis connected with
// connect(host, port), new LockFactory(new RedisStore($redis)),
// createLock($resource, $ttl, false), acquireRead(false), refresh($ttl),
// release(). No departure from it.
//
// The lines it rests on (/usr/share/php/Symfony/Component/Lock):
//   Store/RedisStore.php:123, 130  saveRead drops the members whose
//                             score (an expiry on Redis's TIME, in ms) has
//                             passed, then adds the reader's at now + ttl
//   Store/RedisStore.php:134-135  the key's PEXPIREAT is the highest
//                             score: while another reader's lease runs,
//                             the key and an expired reader's member stay
//   Store/RedisStore.php:165-168  putOffExpiration asks only whether the
//                             reader's member is there; it drops no
//                             expired member first (save, saveRead and
//                             exists do, :75, :123, :241)
//   Store/RedisStore.php:170  and sets the member's score to now + ttl
//   Lock.php:204-208          refresh() resets the key's lifetime and asks
//                             the store, never whether the lease was
//                             still its own
//
// Reader A takes the key for 0.3 s, reader B for 5 s; once A's lease has
// expired (0.6 s later; its member's score is behind Redis's TIME), A's
// refresh(0.3) returns: its member's score is moved ahead and A's
// getRemainingLifetime() is 0.3 s again. The same refresh on a key that A
// held alone is refused (the key expired with A's member): the other
// reader's lease is what keeps the expired one to be revived. Exit 1 when
// the expired reader's refresh succeeds and the lone one's is refused, 0
// when not, 2 when it could not run. The server is stopped, by its PID,
// in every case.

declare(strict_types=1);

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

require __DIR__ . '/redis_server.php';

// redisMs is the server's TIME in ms, as the store's scripts read it.
function redisMs(Redis $r): int
{
    [$s, $us] = $r->time();
    return (int) $s * 1000 + intdiv((int) $us, 1000);
}

// refreshed is what $lock->refresh($ttl) did.
function refreshed($lock, float $ttl): string
{
    try {
        $lock->refresh($ttl);
        return 'returned';
    } catch (Throwable $e) {
        return 'threw ' . get_class($e);
    }
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-lock', '/usr/share/php/Symfony/Component/Lock/autoload.php');
    $port = Servers::freePort();
    $srv->start($port);
    $observer = connect($port);

    // Two readers of "report": A for 0.3 s, B for 5 s.
    $a = (new LockFactory(new RedisStore(connect($port))))->createLock('report', 0.3, false);
    $b = (new LockFactory(new RedisStore(connect($port))))->createLock('report', 5.0, false);
    $gotA = $a->acquireRead(false);
    $gotB = $b->acquireRead(false);
    usleep(600000);
    $scores = $observer->zRange('report', 0, -1, true);
    $now = redisMs($observer);
    $scoreA = min($scores); // A's member: the lower score
    $howA = refreshed($a, 0.3);
    $after = $observer->zRange('report', 0, -1, true);
    printf("readers A (0.3 s) and B (5 s) acquireRead(false): %s, %s; 0.6 s later Redis's TIME is %d ms, A's member's score %d ms (expired %d ms ago), the key's PTTL %d ms\n",
        var_export($gotA, true), var_export($gotB, true), $now, $scoreA, $now - $scoreA, $observer->pTtl('report'));
    printf("A's refresh(0.3) %s; A's member's score now %d ms (%d ms ahead), A's getRemainingLifetime() %.3f s\n",
        $howA, min($after), min($after) - redisMs($observer), $a->getRemainingLifetime() ?? -1);
    $revived = $gotA && $gotB && $scoreA < $now && $howA === 'returned' && min($after) > redisMs($observer);

    // The same refresh of a reader that held its key alone.
    $c = (new LockFactory(new RedisStore(connect($port))))->createLock('invoice', 0.3, false);
    $gotC = $c->acquireRead(false);
    usleep(600000);
    $howC = refreshed($c, 0.3);
    printf("a lone reader C (0.3 s) acquireRead(false): %s; 0.6 s later its refresh(0.3) %s (the key: %s)\n",
        var_export($gotC, true), $howC, $observer->exists('invoice') ? 'there' : 'gone');
    $lone = $gotC && $howC !== 'returned';

    $shown = $revived && $lone;
    echo $shown ? "an expired reader's refresh succeeds while another reader holds the key: the expired lease lives again\n" : "not shown\n";
    return $shown ? 1 : 0;
}

runDemo(main(...));
