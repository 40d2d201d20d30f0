#!/usr/bin/php
<?php
// redlock-clock-quorum.php shows, against five redis-servers of its own,
// the mechanism the survey gives for symfony-redlock clock-quorum and
// malkusch-redlock clock-quorum (Kleppmann's, 2016): a lease taken while
// two masters of five are down lands on a bare majority of three; the
// two come back empty, ONE node of the bare majority jumps its clock
// forward 2 TTL (its keys expire at once), and a second client wins a
// majority (the jumped node and the two returned) while the first still
// holds by its own clock. One node's jump, not a majority's: the bare
// majority is what makes one enough.
//
//   php survey/demos/redlock-clock-quorum.php
//
// The clock fault: every redis-server runs under lockcheck's LD_PRELOAD
// clock shim (cluster/clockshim/clockshim.c, built here with cc, as
// cluster/clock.go builds it), which adds to CLOCK_REALTIME,
// gettimeofday and time() the offset this script writes into the
// node's mapped file (LOCKCHECK_CLOCK_FILE: seq, offset ns, rate, base).
// It is a fault tool, as SIGSTOP is: Redis's expiry and TIME follow the
// wall clock, and the shim moves that clock for one process only; the
// libraries and PHP run on the real clock. Exit 2 when cc or the shim's
// source is missing.
//
// Libraries, used as their documentation shows, each \Redis connected
// with connect(host, port) (no timeouts):
//   Symfony Lock, Debian's php-symfony-lock 5.4.53+dfsg-0+deb12u1: a
//   RedisStore per master (new RedisStore($redis)), new
//   CombinedStore($stores, new ConsensusStrategy()), new
//   LockFactory($store), createLock('invoice', 10.0), acquire(),
//   isExpired(), getRemainingLifetime(), isAcquired().
//   malkusch/lock, Debian's php-malkusch-lock 2.2.1+ds-1: new
//   PHPRedisMutex($fiveRedis, 'balance', 5), synchronized($callback).
// Both on phpredis, php-redis 5.3.7+4.3.0-3. Each client connects to the
// five masters while they are up (lockcheck's adapter connects afresh
// at each acquire; the library sees the same error from a master down).
//
// The lines it rests on:
//   Symfony (/usr/share/php/Symfony/Component/Lock):
//     Store/CombinedStore.php:60-91, Strategy/ConsensusStrategy.php:24-26
//       a lease on more than half of the stores
//     Store/RedisStore.php:72, 305-339  the script's `now` is the node's
//       TIME; :75 it drops members whose score is at most now, :87 ZADDs
//       now + ttl, :91-92 PEXPIREAT: each node expires the lease on its
//       own clock
//     Key.php:71-90  the holder's deadline, microtime(true) + ttl, on the
//       client's clock (isExpired, getRemainingLifetime)
//   malkusch (/usr/share/php/Malkusch/Lock/classes):
//     mutex/RedisMutex.php:63-84, 148-151  a lock on a majority
//     mutex/PHPRedisMutex.php:55, SpinlockMutex.php:73  SET NX EX
//       timeout + 1, expired on each node's clock
//     mutex/SpinlockMutex.php:79-84  the only deadline: unlock() compares
//       the time the callback took with the timeout, afterwards
//
// For each library: the client connects to all five, two masters are
// SIGKILLed, the client acquires (three saved it), the two are restarted
// empty, one of the three jumps 2 TTL forward, and a second client,
// connected afresh, acquires. Exit 1 when either library grants the
// second client while the first holds (Symfony: not expired by its own
// clock; malkusch: the callback still running inside its timeout), 0
// when neither does, 2 when it could not run. Every server and the
// compiler are stopped, by their PIDs, in every case; the shim's files
// are removed.

declare(strict_types=1);

use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\mutex\PHPRedisMutex;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

require __DIR__ . '/redis_server.php';

// holders is which masters have key, by index ("down": not answering),
// and how far each node's clock (TIME) is from this process's.
function holders(array $ports, string $key): string
{
    return eachNode($ports, function (Redis $r) use ($key): string {
        [$s, $us] = $r->time();
        $skew = (int) $s + (int) $us / 1e6 - microtime(true);
        return ($r->exists($key) ? 'key' : 'none') . (abs($skew) > 1 ? sprintf('(clock %+.0f s)', $skew) : '');
    });
}

// Fault is the survey's clock-quorum: down are the two masters down at
// the grant, n the node of the bare majority whose clock jumps.
final class Fault
{
    public function __construct(public readonly array $down, public readonly int $n, public readonly float $jump)
    {
    }

    public function before(Servers $srv, Clocks $clocks, array $ports): void
    {
        foreach ($this->down as $i) {
            $srv->kill($ports[$i]);
        }
    }

    public function after(Servers $srv, Clocks $clocks, array $ports): void
    {
        foreach ($this->down as $i) {
            $srv->start($ports[$i], $clocks->env($i));
        }
        $clocks->set($this->n, $this->jump);
    }
}

function symfony(Servers $srv, Clocks $clocks, array $ports, Fault $fault): bool
{
    $combined = fn (array $redis) => new CombinedStore(array_map(fn (Redis $r) => new RedisStore($r), $redis), new ConsensusStrategy());
    $first = (new LockFactory($combined(connectAll($ports))))->createLock('invoice', 10.0);
    $fault->before($srv, $clocks, $ports);
    $got = $first->acquire();
    $at = holders($ports, 'invoice');
    $fault->after($srv, $clocks, $ports);
    $second = (new LockFactory($combined(connectAll($ports))))->createLock('invoice', 10.0);
    $got2 = $second->acquire();
    $life = $first->getRemainingLifetime();
    $expired = $first->isExpired();
    $at2 = holders($ports, 'invoice');
    $acquired = $first->isAcquired();
    $clocks->set($fault->n, 0);
    printf("symfony-redlock: first acquire() %s on %s; the two back empty, n%d's clock +%.0f s; second client's acquire() %s on %s\n",
        var_export($got, true), $at, $fault->n, $fault->jump, var_export($got2, true), $at2);
    printf("symfony-redlock: the first Lock then: isExpired() %s, getRemainingLifetime() %.2f s of 10; isAcquired() %s (it asks the stores)\n",
        var_export($expired, true), $life, var_export($acquired, true));
    return $got && $got2 && !$expired && $life > 0;
}

function malkusch(Servers $srv, Clocks $clocks, array $ports, Fault $fault): bool
{
    $first = new PHPRedisMutex(connectAll($ports), 'balance', 5);
    $fault->before($srv, $clocks, $ports);
    $t0 = microtime(true);
    $got2 = false;
    $log = [];
    try {
        $first->synchronized(function () use ($srv, $clocks, $ports, $fault, $t0, &$got2, &$log): void {
            $log[] = sprintf('first callback running from %.2f s, lock_balance on %s', microtime(true) - $t0, holders($ports, 'lock_balance'));
            $fault->after($srv, $clocks, $ports);
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
    printf("malkusch-redlock: %s; the two back empty, n%d's clock +%.0f s; %s\n", $log[0] ?? 'first synchronized() did not run its callback', $fault->n, $fault->jump, $log[1] ?? 'the second client\'s callback did not run');
    printf("malkusch-redlock: the first callback returned at %.2f s; its unlock: %s\n", $elapsed, $unlock);
    return $got2 && $elapsed < 5 && !str_contains($unlock, 'ExecutionOutsideLock');
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-symfony-lock php-malkusch-lock', '/usr/share/php/Symfony/Component/Lock/autoload.php', '/usr/share/php/Malkusch/Lock/autoload.php');
    $clocks = new Clocks('redlock-clock-quorum');
    try {
        $ports = [];
        for ($i = 0; $i < 5; $i++) {
            $ports[] = Servers::freePort();
            $srv->start($ports[$i], $clocks->env($i));
        }
        // 2 TTL: Symfony's 10 s, malkusch's key of timeout + 1 = 6 s.
        $symfony = symfony($srv, $clocks, $ports, new Fault([3, 4], 2, 20.0));
        $malkusch = malkusch($srv, $clocks, $ports, new Fault([0, 1], 4, 12.0));
    } finally {
        $srv->stopAll();
        $clocks->remove();
    }
    printf("%s\n", ($symfony || $malkusch) ? 'a bare majority lost a lease to one node\'s clock: granted to a second client while the first held, in ' . implode(' and ', array_keys(array_filter(['symfony-redlock' => $symfony, 'malkusch-redlock' => $malkusch]))) : 'not shown');
    return ($symfony || $malkusch) ? 1 : 0;
}

runDemo(main(...));
