#!/usr/bin/php
<?php
// malkusch-timeout-plus-one.php shows, against redis-servers of its own,
// the mechanism the survey gives for malkusch kill-delayed: the key
// outlives the timeout it was given by a second, so a restart without
// persistence delayed by the documented timeout plus 500 ms (the rule
// that keeps a lock whose key lives its TTL safe) brings the node back
// empty while the holder's key would still be live, and another client
// is granted it then.
//
//   php survey/demos/malkusch-timeout-plus-one.php
//
// Library: malkusch/lock, Debian's php-malkusch-lock 2.2.1+ds-1, its
// PHPRedisMutex on phpredis (php-redis 5.3.7+4.3.0-3), used as its README
// shows: a \Redis connected with connect(host, port), new
// PHPRedisMutex([$redis], $name, $timeout), synchronized($callback).
// No departure from it (lockcheck's adapter connects with a read
// timeout, and holds the lease in a Fiber suspended in the callback;
// here the callback itself waits).
//
// The lines it rests on (/usr/share/php/Malkusch/Lock/classes):
//   mutex/SpinlockMutex.php:50  `$timeout`: "The time in seconds a lock
//                             expires" (the only documentation of it)
//   mutex/SpinlockMutex.php:66-73  lock() sets the key with
//                             `$this->timeout + 1`: "increased by one
//                             second to ensure that we delete only our
//                             keys"
//   mutex/PHPRedisMutex.php:55  SET key token NX EX expire
//   mutex/SpinlockMutex.php:79-84  unlock() throws
//                             ExecutionOutsideLockException when the
//                             callback ran past $timeout, before it
//                             sends the release (:90): the callback is
//                             told afterwards, and the key left to lapse
//   mutex/LockMutex.php:41-67  synchronized(): lock(), the callback,
//                             unlock() in a finally
//
// With timeout 1: first, on a node left alone, the holder's key has a
// PTTL of about 2000 ms and another client's synchronized(), tried
// 1.5 s after the grant, waits until the key lapses (2 s). Then, on a
// second node, the same grant, the node SIGKILLed 0.1 s after it and
// restarted empty on its port 1.5 s later (timeout + 500 ms, as the
// survey's kill-delayed): another client's synchronized() is granted at
// once, before the holder's key (EX 2) would have lapsed, while the
// holder's callback is still running. That callback has overrun the
// timeout it was given, and malkusch says so when it returns
// (ExecutionOutsideLockException): a callback that keeps within its
// timeout has returned before any restart this rule allows, so this
// shows the added second, which protects an overrunning callback from
// the next client on a node that stays up, lost to the restart, not two
// callbacks inside their timeouts. Exit 1 when the restarted node grants
// the key before the holder's key would have lapsed, 0 when not, 2 when
// it could not run. Every server is stopped, by its PID, in every case.

declare(strict_types=1);

use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\mutex\PHPRedisMutex;

require __DIR__ . '/redis_server.php';

// waitUntil sleeps until microtime(true) reaches t.
function waitUntil(float $t): void
{
    while (($left = $t - microtime(true)) > 0) {
        usleep((int) min($left * 1e6, 50000));
    }
}

// hold runs synchronized() on port with timeout 1 and, inside the
// callback, $inside($granted, $keyExpiry); it returns what unlock() said.
function hold(int $port, callable $inside): string
{
    $mutex = new PHPRedisMutex([connect($port)], 'balance', 1);
    $observer = connect($port);
    $before = microtime(true);
    try {
        $mutex->synchronized(function () use ($observer, $before, $inside): void {
            $granted = microtime(true);
            $t = microtime(true);
            $pttl = $observer->pttl('lock_balance');
            $inside($granted - $before, $pttl, $t + $pttl / 1000);
        });
        return 'returned';
    } catch (LockReleaseException $e) {
        return get_class($e) . ': ' . $e->getMessage();
    }
}

// other is another client's synchronized() on port, timeout 1: when its
// callback ran (or why it did not).
function other(int $port): string|float
{
    try {
        $at = null;
        (new PHPRedisMutex([connect($port)], 'balance', 1))->synchronized(function () use (&$at): void {
            $at = microtime(true);
        });
        return $at;
    } catch (Throwable $e) {
        return get_class($e) . ': ' . $e->getMessage();
    }
}

function main(Servers $srv): int
{
    requireLibrary('php-redis php-malkusch-lock', '/usr/share/php/Malkusch/Lock/autoload.php');
    $steady = Servers::freePort();
    $srv->start($steady);
    $killed = Servers::freePort();
    $srv->start($killed);

    // On a node left alone.
    $t0 = microtime(true);
    $pttl0 = 0;
    $otherAt0 = null;
    $expiry0 = 0.0;
    $unlock0 = hold($steady, function (float $lockTook, int $pttl, float $expiry) use ($steady, $t0, &$pttl0, &$otherAt0, &$expiry0): void {
        [$pttl0, $expiry0] = [$pttl, $expiry];
        waitUntil($t0 + $lockTook + 1.5);
        $otherAt0 = other($steady);
    });
    $grant0 = is_float($otherAt0) ? sprintf('%.2f s', $otherAt0 - $t0) : $otherAt0;
    printf("node left alone: PHPRedisMutex([\$redis], 'balance', 1) holds lock_balance, PTTL %d ms; another client's synchronized() from 1.5 s ran at %s, the key lapsing at %.2f s; the holder's unlock: %s\n",
        $pttl0, $grant0, $expiry0 - $t0, $unlock0);

    // On a node killed 0.1 s after the grant, restarted empty 1.5 s later.
    $t1 = microtime(true);
    $pttl1 = 0;
    $otherAt1 = null;
    $expiry1 = 0.0;
    $restartedAt = 0.0;
    $killedAt = 0.0;
    $unlock1 = hold($killed, function (float $lockTook, int $pttl, float $expiry) use ($srv, $killed, $t1, &$pttl1, &$otherAt1, &$expiry1, &$restartedAt, &$killedAt): void {
        [$pttl1, $expiry1] = [$pttl, $expiry];
        waitUntil($t1 + $lockTook + 0.1);
        $srv->kill($killed);
        $killedAt = microtime(true);
        waitUntil($killedAt + 1.5);
        $srv->start($killed);
        $restartedAt = microtime(true);
        $otherAt1 = other($killed);
    });
    $grant1 = is_float($otherAt1) ? sprintf('%.2f s', $otherAt1 - $t1) : $otherAt1;
    printf("node SIGKILLed at %.2f s, back empty at %.2f s (timeout + 500 ms later): PTTL at the grant %d ms, the key would have lapsed at %.2f s; another client's synchronized() ran at %s; the holder's callback, still running then, got from unlock: %s\n",
        $killedAt - $t1, $restartedAt - $t1, $pttl1, $expiry1 - $t1, $grant1, $unlock1);
    $shown = $pttl1 > 1500 && $pttl1 <= 2000 && is_float($otherAt1) && $otherAt1 < $expiry1;
    echo $shown ? "timeout 1 is a 2 s key: a restart delayed by the timeout + 500 ms granted the key to another client while the holder's would still be live\n" : "not shown\n";
    return $shown ? 1 : 0;
}

runDemo(main(...));
