#!/usr/bin/php
<?php
// redlock-bare-majority.php shows, against five redis-servers of its
// own, the mechanism the survey gives for symfony-redlock kill-quorum and
// malkusch-redlock kill-quorum (redsync #186's): a lease taken while two
// masters of five are down lands on a bare majority of three; one of
// those three restarts without persistence (no key), the two come back
// empty, and a second client wins a majority while the first still
// holds.
//
//   php survey/demos/redlock-bare-majority.php
//
// Libraries, used as their documentation shows, each \Redis connected
// with connect(host, port) (no timeouts):
//   Symfony Lock, Debian's php-symfony-lock 5.4.53+dfsg-0+deb12u1: a
//   RedisStore per master (new RedisStore($redis)), new
//   CombinedStore($stores, new ConsensusStrategy()), new
//   LockFactory($store), createLock('invoice', 10.0), acquire(),
//   isExpired(), getRemainingLifetime(), isAcquired().
//   malkusch/lock, Debian's php-malkusch-lock 2.2.1+ds-1: new
//   PHPRedisMutex($fiveRedis, 'balance', 5), synchronized($callback)
//   (the README's RedLock: "acquiring and releasing locks will continue
//   to function as long as a majority of the servers still works").
// Both on phpredis, php-redis 5.3.7+4.3.0-3. No departure from their
// documentation: each client connects to the five masters while they
// are up, as a process does at its start (lockcheck's adapter connects
// afresh at each acquire, keeping a master that is down as an
// unconnected \Redis; here the masters die after the connect, and the
// library sees the same error).
//
// The lines it rests on:
//   Symfony (/usr/share/php/Symfony/Component/Lock):
//     Store/CombinedStore.php:60-91  save() counts the stores that saved
//       the key (a store that throws is a failure, :70-72) and returns
//       once ConsensusStrategy::isMet, more than half
//       (Strategy/ConsensusStrategy.php:24-26)
//     Lock.php:77-114  acquire() saves, then refresh()es with its TTL
//       (CombinedStore::putOffExpiration, a majority again, :135-174)
//     Key.php:71-90  the lock's deadline, microtime(true) + ttl, on the
//       client's clock: isExpired() and getRemainingLifetime() read it
//     Lock.php:231-234, CombinedStore.php:193-220  isAcquired() asks the
//       stores, and needs a majority of them to say yes
//   malkusch (/usr/share/php/Malkusch/Lock/classes):
//     mutex/RedisMutex.php:63-84  acquire() SETs on each master (an error
//       is a warning, :68-79) and holds the lock on isMajority (:148-151)
//     mutex/PHPRedisMutex.php:55  SET key token NX EX timeout + 1
//     mutex/SpinlockMutex.php:79-93  unlock(): ExecutionOutsideLockException
//       past the timeout, else the release, which needs a majority
//       (RedisMutex.php:107-139) or throws LockReleaseException
//
// For each library: the five masters up, the client connects to all,
// two masters are SIGKILLed, the client acquires (three saved it), one
// of those three is SIGKILLed and restarted empty on its port, the two
// are restarted empty, and a second client, connected afresh to all
// five, acquires. Exit 1 when either library grants the second client
// while the first holds (Symfony: the first Lock not expired by its own
// clock; malkusch: the first callback still running, inside its
// timeout), 0 when neither does, 2 when it could not run. Every server
// is stopped, by its PID, in every case.

declare(strict_types=1);

use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\mutex\PHPRedisMutex;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

require __DIR__ . '/redis_server.php';

// holders is which masters have key, by index ("down": not answering).
function holders(array $ports, string $key): string
{
    return eachNode($ports, fn (Redis $r): string => $r->exists($key) ? 'key' : 'none');
}

// fault is the survey's kill-quorum on ports: down are the two masters
// down at the grant, n the one of the bare majority that restarts.
final class Fault
{
    public function __construct(public readonly array $down, public readonly int $n)
    {
    }

    public function before(Servers $srv, array $ports): void
    {
        foreach ($this->down as $i) {
            $srv->kill($ports[$i]);
        }
    }

    public function after(Servers $srv, array $ports): void
    {
        $srv->kill($ports[$this->n]);
        $srv->start($ports[$this->n]);
        foreach ($this->down as $i) {
            $srv->start($ports[$i]);
        }
    }
}

function symfony(Servers $srv, array $ports, Fault $fault): bool
{
    $combined = fn (array $redis) => new CombinedStore(array_map(fn (Redis $r) => new RedisStore($r), $redis), new ConsensusStrategy());
    $first = (new LockFactory($combined(connectAll($ports))))->createLock('invoice', 10.0);
    $fault->before($srv, $ports);
    $got = $first->acquire();
    $at = holders($ports, 'invoice');
    $fault->after($srv, $ports);
    $second = (new LockFactory($combined(connectAll($ports))))->createLock('invoice', 10.0);
    $got2 = $second->acquire();
    $life = $first->getRemainingLifetime();
    $expired = $first->isExpired();
    $at2 = holders($ports, 'invoice');
    $acquired = $first->isAcquired();
    printf("symfony-redlock: first acquire() %s on %s; n%d restarted empty, the two back empty; second client's acquire() %s on %s\n",
        var_export($got, true), $at, $fault->n, var_export($got2, true), $at2);
    printf("symfony-redlock: the first Lock then: isExpired() %s, getRemainingLifetime() %.2f s of 10; isAcquired() %s (it asks the stores)\n",
        var_export($expired, true), $life, var_export($acquired, true));
    return $got && $got2 && !$expired && $life > 0;
}

function malkusch(Servers $srv, array $ports, Fault $fault): bool
{
    $first = new PHPRedisMutex(connectAll($ports), 'balance', 5);
    $fault->before($srv, $ports);
    $t0 = microtime(true);
    $got2 = false;
    $log = [];
    try {
        $first->synchronized(function () use ($srv, $ports, $fault, $t0, &$got2, &$log): void {
            $log[] = sprintf('first callback running from %.2f s, lock_balance on %s', microtime(true) - $t0, holders($ports, 'lock_balance'));
            $fault->after($srv, $ports);
            $second = new PHPRedisMutex(connectAll($ports), 'balance', 5);
            $second->synchronized(function () use ($ports, $t0, &$got2, &$log): void {
                $got2 = true;
                $log[] = sprintf('second client\'s callback running at %.2f s, inside the first\'s (timeout 5 s), lock_balance on %s', microtime(true) - $t0, holders($ports, 'lock_balance'));
            });
        });
        $unlock = 'returned';
    } catch (LockReleaseException $e) {
        $unlock = get_class($e) . ': ' . $e->getMessage();
    }
    $elapsed = microtime(true) - $t0;
    printf("malkusch-redlock: %s; n%d restarted empty, the two back empty; %s\n", $log[0] ?? 'first synchronized() did not run its callback', $fault->n, $log[1] ?? 'the second client\'s callback did not run');
    printf("malkusch-redlock: the first callback returned at %.2f s; its unlock: %s\n", $elapsed, $unlock);
    return $got2 && $elapsed < 5 && !str_contains($unlock, 'ExecutionOutsideLock');
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-lock php-malkusch-lock', '/usr/share/php/Symfony/Component/Lock/autoload.php', '/usr/share/php/Malkusch/Lock/autoload.php');
    $ports = [];
    for ($i = 0; $i < 5; $i++) {
        $ports[] = Servers::freePort();
        $srv->start($ports[$i]);
    }
    $symfony = symfony($srv, $ports, new Fault([3, 4], 2));
    $malkusch = malkusch($srv, $ports, new Fault([0, 1], 4));
    printf("%s\n", ($symfony || $malkusch) ? 'a bare majority lost a lease to one restart: granted to a second client while the first held, in ' . implode(' and ', array_keys(array_filter(['symfony-redlock' => $symfony, 'malkusch-redlock' => $malkusch]))) : 'not shown');
    return ($symfony || $malkusch) ? 1 : 0;
}

runDemo(main(...));
