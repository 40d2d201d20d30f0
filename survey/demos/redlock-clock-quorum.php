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

// Clocks are the nodes' clock files and the shim they run under.
final class Clocks
{
    public readonly string $dir;
    public readonly string $shim;

    public function __construct()
    {
        $src = dirname(__DIR__, 2) . '/cluster/clockshim/clockshim.c';
        if (!is_file($src)) {
            throw new CouldNotRun("$src is missing");
        }
        $this->dir = sys_get_temp_dir() . '/redlock-clock-quorum-' . getmypid();
        if (!is_dir($this->dir) && !mkdir($this->dir)) {
            throw new CouldNotRun("cannot make {$this->dir}");
        }
        $this->shim = $this->dir . '/clockshim.so';
        $cc = @proc_open(['cc', '-shared', '-fPIC', '-O2', '-o', $this->shim, $src], [1 => ['file', '/dev/null', 'w'], 2 => ['pipe', 'w']], $pipes);
        if (!is_resource($cc)) {
            $this->remove();
            throw new CouldNotRun('no C compiler (cc) to build the clock shim');
        }
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[2]);
        if (proc_close($cc) !== 0 || !is_file($this->shim)) {
            $this->remove();
            throw new CouldNotRun("cc could not build the clock shim: $err");
        }
    }

    // env is node i's environment: the shim, and its clock file, at 0.
    public function env(int $i): array
    {
        $file = "{$this->dir}/clock-$i";
        if (!is_file($file)) {
            file_put_contents($file, str_repeat("\0", 32));
        }
        return ['LD_PRELOAD' => $this->shim, 'LOCKCHECK_CLOCK_FILE' => $file];
    }

    // set makes node i's clock read real time + offset seconds (the
    // shim's seqlock: seq odd while the offset is written).
    public function set(int $i, float $offset): void
    {
        $f = fopen("{$this->dir}/clock-$i", 'r+b');
        $seq = unpack('P', fread($f, 8))[1];
        foreach ([[0, $seq + 1], [8, (int) round($offset * 1e9)], [16, 0], [24, (int) (microtime(true) * 1e9)], [0, $seq + 2]] as [$at, $v]) {
            fseek($f, $at);
            fwrite($f, pack('P', $v));
            fflush($f);
        }
        fclose($f);
    }

    public function remove(): void
    {
        foreach (glob($this->dir . '/*') ?: [] as $f) {
            unlink($f);
        }
        @rmdir($this->dir);
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

// holders is which masters have key, by index ("down": not answering),
// and how far each node's clock (TIME) is from this process's.
function holders(array $ports, string $key): string
{
    $out = [];
    foreach ($ports as $i => $port) {
        try {
            $r = new Redis();
            $r->connect('127.0.0.1', $port, 1.0);
            [$s, $us] = $r->time();
            $skew = (int) $s + (int) $us / 1e6 - microtime(true);
            $out[] = "n$i:" . ($r->exists($key) ? 'key' : 'none') . (abs($skew) > 1 ? sprintf('(clock %+.0f s)', $skew) : '');
            $r->close();
        } catch (RedisException $e) {
            $out[] = "n$i:down";
        }
    }
    return implode(' ', $out);
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
    foreach (['/usr/share/php/Symfony/Component/Lock/autoload.php', '/usr/share/php/Malkusch/Lock/autoload.php'] as $autoload) {
        if (!extension_loaded('redis') || !is_file($autoload)) {
            throw new CouldNotRun("phpredis or $autoload is missing: apt-get install php-redis php-symfony-lock php-malkusch-lock");
        }
        require_once $autoload;
    }
    $clocks = new Clocks();
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
