<?php
// redis_server.php is the PHP demonstrations' own helper (survey/demos/*.php,
// registered in survey/demos_php.go), not lockcheck: the machinery they
// share, so that each demonstration keeps only what it shows. Each one
// loads it with `require __DIR__ . '/redis_server.php';`.
//
// It holds:
//   CouldNotRun        what a demonstration throws when it cannot run
//                      (exit 2)
//   Servers            the redis-server processes a demonstration starts
//                      (getenv('REDIS_SERVER') ?: 'redis-server'), each on
//                      a free port of 127.0.0.1, empty (no RDB, no AOF),
//                      waited for until it answers PING, and stopped with
//                      SIGKILL by its PID
//   Clocks             lockcheck's LD_PRELOAD clock shim
//                      (cluster/clockshim/clockshim.c) built with cc, as
//                      cluster/clock.go builds it, and each node's clock
//                      file, whose offset moves that node's wall clock
//   connect, connectAll  a \Redis connected with connect(host, port), no
//                      timeouts, as the libraries' documentation does
//   eachNode           what a function of a connection says of each node,
//                      "down" for a node that does not answer
//   requireLibrary     phpredis and the library's autoload, else CouldNotRun
//   runDemo            runs a demonstration's main: a 14 s deadline
//                      (SIGALRM), CouldNotRun and anything unforeseen
//                      reported on stderr with exit 2, every server
//                      stopped by its PID in every case, and main's exit
//                      status (1: the mechanism showed, 0: it did not)

declare(strict_types=1);

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

// Clocks are the nodes' clock files and the shim they run under, in a
// directory of this process's own (name-PID under the temporary
// directory), removed by remove().
final class Clocks
{
    public readonly string $dir;
    public readonly string $shim;

    public function __construct(string $name)
    {
        $src = dirname(__DIR__, 2) . '/cluster/clockshim/clockshim.c';
        if (!is_file($src)) {
            throw new CouldNotRun("$src is missing");
        }
        $this->dir = sys_get_temp_dir() . '/' . $name . '-' . getmypid();
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

// connect connects to the server on port as the documentation does:
// connect(host, port), no timeouts.
function connect(int $port): Redis
{
    $r = new Redis();
    $r->connect('127.0.0.1', $port);
    return $r;
}

// connectAll connects to every master, as the documentation does.
function connectAll(array $ports): array
{
    return array_map(fn (int $port): Redis => connect($port), $ports);
}

// eachNode is "n<index>:" and what $what says of a fresh connection (1 s
// connect timeout) to each port, "n<index>:down" for one not answering,
// joined by spaces.
function eachNode(array $ports, callable $what): string
{
    $out = [];
    foreach ($ports as $i => $port) {
        try {
            $r = new Redis();
            $r->connect('127.0.0.1', $port, 1.0);
            $out[] = "n$i:" . $what($r);
            $r->close();
        } catch (RedisException $e) {
            $out[] = "n$i:down";
        }
    }
    return implode(' ', $out);
}

// requireLibrary loads each autoload, after checking that phpredis and it
// are there; CouldNotRun names the Debian packages ($packages) when not.
function requireLibrary(string $packages, string ...$autoloads): void
{
    if (!$autoloads && !extension_loaded('redis')) {
        throw new CouldNotRun("phpredis is missing: apt-get install $packages");
    }
    foreach ($autoloads as $autoload) {
        if (!extension_loaded('redis') || !is_file($autoload)) {
            throw new CouldNotRun("phpredis or $autoload is missing: apt-get install $packages");
        }
        require_once $autoload;
    }
}

// runDemo runs $main with the servers it may start and exits with what
// it returned; 2 when it threw (a CouldNotRun's message alone, anything
// else with its class) or did not finish in 14 s. Every server is
// stopped, by its PID, in every case.
function runDemo(callable $main): never
{
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
        $code = $main($srv);
    } catch (Throwable $e) {
        // could not run: redis-server, the library, or anything unforeseen
        fwrite(STDERR, ($e instanceof CouldNotRun ? '' : get_class($e) . ': ') . $e->getMessage() . "\n");
    } finally {
        $srv->stopAll();
    }
    exit($code);
}
