#!/usr/bin/php
<?php
// phpredis_desync.php shows, against a redis-server of its own, what
// breaks malkusch/lock under pause-redis and stall-quiet (docs/survey.md):
// phpredis leaves a connection open after an EVAL's reply times out, and
// the next command reads that late reply as its own.
//
//   php examples/adapters/php/phpredis_desync.php
//
// It starts redis-server on a free port, sets a key another client holds,
// stops the server (SIGSTOP) for 1.2 s while malkusch's spin loop does a
// try: SET NX (its reply times out, 0.5 s) and the clean-up EVAL
// (RedisMutex::release, its reply times out too), then, after the server
// resumes, sends SET x v and GET x on the same connection. Exit 1 when
// the replies come one command late (SET answers false, GET answers the
// raw reply of the EVAL before it), 0 when they do not; the server is
// stopped in every case.

declare(strict_types=1);

function freePort(): int
{
    $s = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
    fclose($s);
    return $port;
}

$port = freePort();
$srv = proc_open(['redis-server', '--port', (string) $port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
$pid = proc_get_status($srv)['pid'];
$code = 2;
try {
    $r = new Redis();
    for ($i = 0;; $i++) {
        try {
            $r->connect('127.0.0.1', $port, 0.5, null, 0, 0.5);
            break;
        } catch (RedisException $e) {
            if ($i === 50) {
                throw $e;
            }
            usleep(100000); // redis-server is starting
        }
    }
    $r->set('lock_k', 'another client');
    posix_kill($pid, SIGSTOP);
    $t0 = microtime(true);
    foreach (['SET NX' => fn () => $r->set('lock_k', 'mine', ['nx', 'ex' => 2]),
        'EVAL' => fn () => $r->eval('if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end', ['lock_k', 'mine'], 1)] as $what => $send) {
        try {
            $send();
        } catch (RedisException $e) {
            printf("%.2f s: %s threw %s\n", microtime(true) - $t0, $what, $e->getMessage());
        }
    }
    usleep((int) ((1.2 - (microtime(true) - $t0)) * 1e6));
    posix_kill($pid, SIGCONT);
    usleep(300000);
    $set = $r->set('x', 'v');
    $get = $r->get('x');
    printf("after the server resumed: SET x v answered %s, GET x answered %s\n", var_export($set, true), var_export($get, true));
    $code = ($set === true && $get === 'v') ? 0 : 1;
    echo $code ? "the connection reads every reply one command late (phpredis " . phpversion('redis') . ")\n" : "replies in step\n";
} finally {
    posix_kill($pid, SIGCONT);
    posix_kill($pid, SIGTERM);
    proc_close($srv);
}
exit($code);
