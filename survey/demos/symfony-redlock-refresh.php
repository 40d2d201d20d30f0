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

final class CouldNotRun extends RuntimeException
{
}

// Servers are the redis-server processes this script started, by port;
// each is stopped by its PID.
final class Servers
{
    private array $procs = [];

    public function __construct(private readonly string $bin)
    {
    }

    public static function freePort(): int
    {
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        return $port;
    }

    // start runs an empty redis-server (no RDB, no AOF) on port and
    // returns its PID once it answers PING.
    public function start(int $port, array $env = []): int
    {
        $cmd = [$this->bin, '--port', (string) $port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
        $null = [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']];
        $proc = @proc_open($cmd, $null, $pipes, null, $env ? $env + getenv() : null);
        if (!is_resource($proc)) {
            throw new CouldNotRun("could not run {$this->bin}");
        }
        $pid = proc_get_status($proc)['pid'];
        $this->procs[$port] = [$proc, $pid];
        for ($until = microtime(true) + 10; microtime(true) < $until && proc_get_status($proc)['running'];) {
            $c = @stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 1);
            if ($c !== false) {
                stream_set_timeout($c, 2);
                fwrite($c, "PING\r\n");
                $pong = fgets($c);
                fclose($c);
                if ($pong === "+PONG\r\n") {
                    return $pid;
                }
            }
            usleep(20000);
        }
        $this->kill($port);
        throw new CouldNotRun("{$this->bin} would not start on 127.0.0.1:$port");
    }

    // kill stops the server on port with SIGKILL and reaps it.
    public function kill(int $port): void
    {
        [$proc, $pid] = $this->procs[$port] ?? [null, 0];
        unset($this->procs[$port]);
        if ($proc !== null) {
            posix_kill($pid, SIGCONT);
            posix_kill($pid, SIGKILL);
            proc_close($proc);
        }
    }

    public function stopAll(): void
    {
        foreach (array_keys($this->procs) as $port) {
            $this->kill($port);
        }
    }
}

// connectAll connects to every master, as the documentation does.
function connectAll(array $ports): array
{
    return array_map(function (int $port): Redis {
        $r = new Redis();
        $r->connect('127.0.0.1', $port);
        return $r;
    }, $ports);
}

// holders is each master's PTTL of key, by index ("down": not answering;
// -2: no key).
function holders(array $ports, string $key): string
{
    $out = [];
    foreach ($ports as $i => $port) {
        try {
            $r = new Redis();
            $r->connect('127.0.0.1', $port, 1.0);
            $out[] = "n$i:" . $r->pttl($key);
            $r->close();
        } catch (RedisException $e) {
            $out[] = "n$i:down";
        }
    }
    return implode(' ', $out);
}

// held is how many masters have key.
function held(array $ports, string $key): int
{
    return preg_match_all('/n\d:\d+/', holders($ports, $key));
}

function main(Servers $srv): int
{
    $autoload = '/usr/share/php/Symfony/Component/Lock/autoload.php';
    if (!extension_loaded('redis') || !is_file($autoload)) {
        throw new CouldNotRun("phpredis or $autoload is missing: apt-get install php-redis php-symfony-lock");
    }
    require_once $autoload;
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

$srv = new Servers(getenv('REDIS_SERVER') ?: 'redis-server');
pcntl_async_signals(true);
pcntl_signal(SIGALRM, function () use ($srv): void {
    $srv->stopAll();
    fwrite(STDERR, "did not finish in 14 s\n");
    exit(2);
});
pcntl_alarm(14);
$code = 2;
try {
    $code = main($srv);
} catch (Throwable $e) {
    // could not run: redis-server, the library, or anything unforeseen
    fwrite(STDERR, ($e instanceof CouldNotRun ? '' : get_class($e) . ': ') . $e->getMessage() . "\n");
} finally {
    $srv->stopAll();
}
exit($code);
