#!/usr/bin/php
<?php
// symfony-redlock-refresh.php shows, against five redis-servers of its
// own, the mechanism the survey gives for symfony-redlock kill-extend:
// CombinedStore::putOffExpiration needs a majority of the stores again,
// and when a refresh does not get one it deletes the key on the stores
// that still hold it. A live lease held on a bare majority (three of
// five, taken while two masters were down, which came back empty) is
// lost by one refresh while one master of its three is down: its holder
// is told it conflicted, and the key is free to anyone.
//
//   php survey/demos/symfony-redlock-refresh.php
//
// Library: Symfony Lock, Debian's php-symfony-lock 5.4.53+dfsg-0+deb12u1,
// on phpredis (php-redis 5.3.7+4.3.0-3), used as its documentation
// shows: a \Redis per master connected with connect(host, port), new
// RedisStore($redis), new CombinedStore($stores, new
// ConsensusStrategy()), new LockFactory($store), createLock('invoice',
// 10.0), acquire(), refresh(), isExpired(), getRemainingLifetime(),
// isAcquired(). No departure from it (the client connects to the five
// while they are up; lockcheck's adapter connects afresh at each
// acquire).
//
// The lines it rests on (/usr/share/php/Symfony/Component/Lock):
//   Store/CombinedStore.php:60-91  save() succeeds on a majority
//     (ConsensusStrategy::isMet, Strategy/ConsensusStrategy.php:24-26):
//     three of five
//   Store/CombinedStore.php:135-174  putOffExpiration(): each store's
//     putOffExpiration, a failure counted when it throws (:152-155); it
//     stops once ConsensusStrategy::canBeMet fails (:157-159); short of
//     isMet (:164) it deletes the key on every store (:170-171, delete
//     :179-188) and throws LockConflictedException (:173)
//   Store/RedisStore.php:151-189  a store without the key answers false
//     (:166-168), LockConflictedException (:184-186); a master down
//     throws RedisException
//   Lock.php:194-226  refresh(): LockConflictedException passed on
//     (:218-221), the lock no longer dirty
//
// It connects to the five, SIGKILLs two, acquires (three saved it),
// restarts the two empty, SIGKILLs one of the three, and refreshes;
// then another client, connected before that kill, acquires.
// Exit 1 when the refresh throws and the key is gone from the two
// masters that held it while the lease had most of its TTL left, 0 when
// not, 2 when it could not run. Every server is stopped, by its PID, in
// every case.

declare(strict_types=1);

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

require __DIR__ . '/redis_server.php';

// holders is each master's PTTL of key, by index ("down": not answering;
// -2: no key).
function holders(array $ports, string $key): string
{
    return eachNode($ports, fn (Redis $r): string => (string) $r->pttl($key));
}

// held is how many masters have key.
function held(array $ports, string $key): int
{
    return preg_match_all('/n\d:\d+/', holders($ports, $key));
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-lock', '/usr/share/php/Symfony/Component/Lock/autoload.php');
    $ports = [];
    for ($i = 0; $i < 5; $i++) {
        $ports[] = Servers::freePort();
        $srv->start($ports[$i]);
    }
    $store = fn (array $redis) => new CombinedStore(array_map(fn (Redis $r) => new RedisStore($r), $redis), new ConsensusStrategy());
    $lock = (new LockFactory($store(connectAll($ports))))->createLock('invoice', 10.0);
    $srv->kill($ports[3]);
    $srv->kill($ports[4]);
    $got = $lock->acquire();
    $srv->start($ports[3]);
    $srv->start($ports[4]);
    $otherRedis = connectAll($ports); // another client, connected now
    $srv->kill($ports[2]);
    $before = holders($ports, 'invoice');
    $life = $lock->getRemainingLifetime();
    printf("acquire() %s while n3 and n4 were down; they are back empty, n2 is down: PTTL %s ms, getRemainingLifetime() %.2f s of 10\n",
        var_export($got, true), $before, $life);
    try {
        $lock->refresh();
        $how = 'returned';
    } catch (Throwable $e) {
        $how = 'threw ' . get_class($e);
    }
    $after = holders($ports, 'invoice');
    printf("refresh() %s; then PTTL %s ms, isAcquired() %s, isExpired() %s\n", $how, $after, var_export($lock->isAcquired(), true), var_export($lock->isExpired(), true));
    $other = (new LockFactory($store($otherRedis)))->createLock('invoice', 10.0);
    printf("another client's acquire() then: %s\n", var_export($other->acquire(), true));
    $shown = $got && $life > 5 && str_contains($how, 'LockConflictedException') && preg_match('/n0:\d+ n1:\d+/', $before) && preg_match('/n0:-2 n1:-2/', $after);
    echo $shown ? "a live lease on a bare majority lost to one refresh with one master down: the refresh deleted it where it was held\n" : "not shown\n";
    return $shown ? 1 : 0;
}

runDemo(main(...));
