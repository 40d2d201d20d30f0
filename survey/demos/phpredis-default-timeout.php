#!/usr/bin/php
<?php
// phpredis-default-timeout.php is the contrast to
// examples/adapters/php/phpredis_desync.php: the same commands over a
// server stopped for 1.2 s, on a connection made as malkusch/lock's
// README makes it, connect(host, port) with no timeouts, so that a read
// waits default_socket_timeout (60 s). It answers "at the library's
// default?" for the survey's malkusch pause-redis and stall-quiet, whose
// mechanism (a read that timed out leaves the connection one reply
// behind) needs the 0.5 s read timeout lockcheck's adapter sets
// (examples/adapters/php/lock.php, dial(): connect(..., opTimeout(),
// null, 0, opTimeout())).
//
//   php survey/demos/phpredis-default-timeout.php
//
// Library: phpredis, Debian's php-redis 5.3.7+4.3.0-3, as malkusch/lock
// 2.2.1 (php-malkusch-lock 2.2.1+ds-1) drives it: its spin loop sends
// SET key token NX EX timeout+1 (classes/mutex/PHPRedisMutex.php:55,
// SpinlockMutex.php:73) and, after a try that failed, the release EVAL
// (RedisMutex.php:92, its script :115-120). Its README connects with
// `$redis->connect("localhost")`: no connect or read timeout, so phpredis
// reads with PHP's default_socket_timeout (60 s, php.ini).
//
// It starts redis-server on a free port, sets the key another client
// holds, stops the server (SIGSTOP) for 1.2 s, longer than the survey's
// 1 s stalls, as phpredis_desync.php does, while it sends SET NX and the
// EVAL (a child `sleep 1.2; kill -CONT` resumes it), then SET x v and
// GET x on the same connection. Exit 0 when the replies are in step
// (the stall only delays them: not shown at the library's default), 1
// when they come one command late, 2 when it could not run. The server
// and the child are stopped, by their PIDs, in every case.

declare(strict_types=1);

require __DIR__ . '/redis_server.php';

function main(Servers $srv): int
{
    requireLibrary('php-redis');
    $port = Servers::freePort();
    $pid = $srv->start($port);
    $r = new Redis();
    $r->connect('127.0.0.1', $port); // as malkusch's README: no timeouts
    $r->set('lock_k', 'another client');
    posix_kill($pid, SIGSTOP);
    $t0 = microtime(true);
    $waker = proc_open(['/bin/sh', '-c', 'sleep 1.2; exec kill -CONT "$0"', (string) $pid], [], $pipes);
    $wakerPid = proc_get_status($waker)['pid'];
    try {
        $seen = [];
        foreach (['SET NX' => fn () => $r->set('lock_k', 'mine', ['nx', 'ex' => 2]),
            'EVAL' => fn () => $r->eval('if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end', ['lock_k', 'mine'], 1)] as $what => $send) {
            try {
                $seen[] = sprintf('%s answered %s at %.2f s', $what, var_export($send(), true), microtime(true) - $t0);
            } catch (RedisException $e) {
                $seen[] = sprintf('%s threw %s at %.2f s', $what, $e->getMessage(), microtime(true) - $t0);
            }
        }
    } finally {
        posix_kill($wakerPid, SIGKILL);
        proc_close($waker);
        posix_kill($pid, SIGCONT);
    }
    printf("read timeout: default_socket_timeout, %s s; server stopped 1.2 s: %s\n", ini_get('default_socket_timeout'), implode(', ', $seen));
    $set = $r->set('x', 'v');
    $get = $r->get('x');
    printf("then: SET x v answered %s, GET x answered %s\n", var_export($set, true), var_export($get, true));
    $code = ($set === true && $get === 'v') ? 0 : 1;
    echo $code ? "the connection reads every reply one command late (phpredis " . phpversion('redis') . ")\n" : "replies in step: a 1.2 s stall only delays them at phpredis's default timeout (not shown)\n";
    return $code;
}

runDemo(main(...));
