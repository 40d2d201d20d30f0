#!/usr/bin/python3
"""tooz's heartbeat loses a lock and tells its holder nothing.

    /usr/bin/python3 survey/demos/tooz-heartbeat.py

The mechanism behind tooz's breaks in docs/survey.md, with tooz alone
(Debian's python3-tooz 3.1.0 on python3-redis), used as its documentation
shows: coordination.get_coordinator('redis://...'), start(start_heart=True),
get_lock(name).acquire(blocking=False). The only option set is the
driver's lock_timeout (3 s, in the URL: tooz/drivers/redis.py:368-369);
the socket timeout is tooz's default.

It starts a redis-server of its own ($REDIS_SERVER, else redis-server) on a
free 127.0.0.1 port without persistence. A holder acquires the lock, and
the coordinator's heart renews it (RedisLock.heartbeat: redis-py's
reacquire) past lock_timeout. The demo then stops redis (SIGSTOP) for
longer than lock_timeout and continues it: the key has run out, the
heart's renewal fails, and the driver logs a warning and swallows the
error (tooz/drivers/redis.py:536-548; the heart's loop,
tooz/coordination.py:182-207). A second coordinator acquires the lock.
The holder was told nothing: no exception reached it, tooz has no
callback for a lost lock, and the lock's `acquired` still says True.
tooz does offer a way to ask: Lock.is_still_owner() (tooz/locking.py:59;
the Redis driver's, tooz/drivers/redis.py:93); the demo calls it and
prints what it says (lockcheck's adapter never calls it).

Exit 1 when the second coordinator acquired while the holder was told
nothing, 0 when it was not, 2 when the demo could not run. Redis is
stopped by its PID in every case; the demo is bounded (18 s after its
imports).
"""
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

IMPORT_START = time.monotonic()
try:
    import redis as redis_mod
    from tooz import coordination
except ImportError as e:
    print("CANNOT RUN: %s (apt-get install python3-tooz)" % e, flush=True)
    sys.exit(2)

LOCK_TIMEOUT = 3  # seconds: tooz's lock_timeout is whole seconds
HOLD_FIRST = 3.5  # held past lock_timeout on the heart's renewals
STOP_FOR = 5.0  # redis stopped for longer than lock_timeout
DEADLINE = 18.0  # the demo, from its imports' end (tooz's take seconds on a busy machine), then exit 2

T0 = time.monotonic()
redis_proc = None


def say(msg):
    print("%5.2fs %s" % (time.monotonic() - T0, msg), flush=True)


def watchdog():
    say("DEADLINE: the demo ran past %.0f s; stopping redis and exiting 2" % DEADLINE)
    if redis_proc is not None:
        try:
            os.kill(redis_proc.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(2)


class Captured(logging.Handler):
    """The warnings tooz logs, each with when."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []
        self.mu = threading.Lock()
        self.heartbeat_failed = threading.Event()

    def emit(self, record):
        msg = record.getMessage().splitlines()[0]
        with self.mu:
            self.records.append((time.monotonic() - T0, record.name, msg))
        if msg.startswith("Unable to heartbeat lock"):
            self.heartbeat_failed.set()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis():
    global redis_proc
    binary = os.environ.get("REDIS_SERVER") or "redis-server"
    last = None
    for _ in range(3):
        port = free_port()
        redis_proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", tempfile.gettempdir()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis_mod.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and redis_proc.poll() is None:
            try:
                client.ping()
                return port, client
            except redis_mod.RedisError as e:
                last = e
                time.sleep(0.05)
        stop_redis()
    raise RuntimeError("redis-server did not start: %s" % last)


def stop_redis():
    global redis_proc
    p, redis_proc = redis_proc, None
    if p is None:
        return
    try:
        os.kill(p.pid, signal.SIGCONT)
        p.terminate()
        p.wait(timeout=3)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=3)
    except OSError:
        pass


def main():
    timer = threading.Timer(DEADLINE, watchdog)
    timer.daemon = True
    timer.start()
    say("tooz and redis-py imported in %.2f s" % (T0 - IMPORT_START))
    captured = Captured()
    toozlog = logging.getLogger("tooz")
    toozlog.addHandler(captured)
    toozlog.propagate = False  # the warnings are printed below, without their tracebacks

    coords = []
    try:
        try:
            port, client = start_redis()
        except (OSError, RuntimeError) as e:
            say("CANNOT RUN: %s" % e)
            return 2
        url = "redis://127.0.0.1:%d?lock_timeout=%d" % (port, LOCK_TIMEOUT)
        say("redis-server pid %d on 127.0.0.1:%d; tooz url %s" % (redis_proc.pid, port, url))

        holder = coordination.get_coordinator(url, b"holder")
        holder.start(start_heart=True)
        coords.append(holder)
        lock = holder.get_lock("demo")
        if not lock.acquire(blocking=False):
            say("CANNOT RUN: the holder did not acquire a free lock")
            return 2
        key = lock.name
        say("holder acquired %r (lock_timeout %d s); its heart renews it" % (key, LOCK_TIMEOUT))

        other = coordination.get_coordinator(url, b"other")
        other.start(start_heart=True)
        coords.append(other)
        other_lock = other.get_lock("demo")

        time.sleep(HOLD_FIRST)
        pttl = client.pttl(key)
        if other_lock.acquire(blocking=False):
            say("CANNOT RUN: a second coordinator acquired before any fault (the heart did not renew in time: a busy machine?)")
            return 2
        say("after %.1f s (past lock_timeout) the key lives on (PTTL %d ms): the heart renewed it; a second coordinator is refused" % (HOLD_FIRST, pttl))
        say("holder: lock.is_still_owner() -> %s" % lock.is_still_owner())

        os.kill(redis_proc.pid, signal.SIGSTOP)
        say("redis stopped (SIGSTOP) for %.1f s, longer than lock_timeout" % STOP_FOR)
        time.sleep(STOP_FOR)
        os.kill(redis_proc.pid, signal.SIGCONT)
        say("redis continued (SIGCONT)")

        failed = captured.heartbeat_failed.wait(4.0)
        say("the heart's renewal %s" % ("failed" if failed else "has not failed yet"))

        acquired = other_lock.acquire(blocking=False)
        say("second coordinator: acquire(blocking=False) -> %s" % acquired)

        # The holder was told nothing: the heart runs on a thread of its
        # own, no exception reaches the holder, tooz has no callback for a
        # lost lock, and the lock's own `acquired` still says held. It
        # would go on writing here. What tooz offers it to find out:
        # is_still_owner().
        held_in_tooz = lock.acquired
        try:
            still_owner = lock.is_still_owner()
        except coordination.ToozError as e:
            still_owner = "raised %s: %s" % (type(e).__name__, e)
        say("holder: no exception, no callback; tooz's lock.acquired -> %s" % held_in_tooz)
        say("holder: lock.is_still_owner() -> %s (tooz offers this; it must be called to learn of the loss)" % (still_owner,))

        with captured.mu:
            records = list(captured.records)
        for at, name, msg in records:
            say("  logged at %.2fs by %s: WARNING %s" % (at, name, msg.replace(repr(lock), "<the holder's lock>")))

        if acquired and held_in_tooz:
            say("MECHANISM SHOWN: the second coordinator acquired the lock while the first holder was told nothing "
                "(its renewal failed in the heart, logged and swallowed); is_still_owner() says %s" % (still_owner,))
            return 1
        say("NOT SHOWN: second coordinator acquired: %s; the holder's lock.acquired: %s" % (acquired, held_in_tooz))
        return 0
    except Exception as e:  # anything unforeseen is a demo that did not run, not a mechanism shown
        say("CANNOT RUN: %s: %s" % (type(e).__name__, e))
        return 2
    finally:
        if redis_proc is not None:
            try:
                os.kill(redis_proc.pid, signal.SIGCONT)
            except OSError:
                pass
        for c in reversed(coords):
            try:
                c.stop()
            except Exception as e:  # the demo's result is printed; a failed stop is not it
                say("stop: %s: %s" % (type(e).__name__, e))
        stop_redis()
        timer.cancel()
        # To stderr: the conclusion printed above stays the last line of
        # stdout, which the survey's page quotes.
        print("%5.2fs redis stopped; done" % (time.monotonic() - T0), file=sys.stderr, flush=True)


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # e.g. stdout closed while stopping: exit 2, never 1 by accident
        code = 2
    sys.exit(code)
