#!/usr/bin/python3
"""redis-py's Lock (redis.lock.Lock) as a lockcheck lock process.

    lockcheck verify --lock-cmd "examples/adapters/redispy/lock.py"
    lockcheck verify --lock-cmd "examples/adapters/redispy/lock.py --shared"

It speaks lockcheck's JSON-lines protocol (README, "A program in any
language"): requests on stdin, replies on stdout, many in flight, each
served on a thread of its own as a threaded application would.

Modes:
  (default)     one Lock object per lease, as redis-py documents: acquire
                makes a Lock, release and extend call that object.
  --shared      one Lock object per key, shared by every thread, with
                thread_local=False: the mechanism of redis-py #416 (and
                aredis #119). The object keeps one token; a thread's
                acquire overwrites it, so a holder whose lease expired
                releases (or extends) the next holder's lease.
  --watchdog    a thread per lease extends it every TTL/3 with
                Lock.extend(replace_ttl=True), announcing each extend to
                lockcheck (events), until its release or a failed extend.
  --start-delay S
                sleep S seconds before serving (a slow start, as a JVM's).
  --wake-bound-ms MS
                declare MS as the wake-up bound in place of twice the
                poll interval (a wrong bound: for lockcheck's own tests only).

Blocking waits (--wait): the ping's reply declares "wake_bound_ms",
twice the Lock's sleep (the sleep, and as long again for a try's round
trip and a sleep overshot on a loaded machine: a lost wake-up sleeps far
longer), so each acquire carries "wait_ms" and is redis-py's own
blocking acquire, Lock.acquire(blocking=True, blocking_timeout=wait).
Without wait_ms an acquire is one try (blocking=False), as before.
An acquire that waited and took the key says when its winning try was
sent ("tried_ms", after the request was read): each lease's Lock is
given a client of its own over the adapter's connection pool
(TimedRedis) that notes when each SET it sends began, as redis-py's Lock
sends each try as one SET (redis/lock.py:223); --shared Locks, one for
every thread of a key, say nothing.

Debian's python3-redis (redis-py 4.3) is what CI installs.
"""
import argparse
import json
import os
import inspect
import math
import secrets
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import redis
from redis.exceptions import LockError, LockNotOwnedError, RedisError
from redis.lock import Lock

# POLL_S is how long redis-py's blocking acquire sleeps between tries:
# Lock's sleep, 0.1 s unless given (redis/lock.py:81, 139, 192-193). Its
# loop (lock.py:206-215) tries, and unless the next try would fall past
# blocking_timeout (monotonic, lock.py:205, 212-214: so it gives up up
# to one sleep early, never late) sleeps that long and tries again:
# a waiter sleeps at most POLL_S (plus a try's round trip) on a free
# key. Read from the signature, so that the bound is the value in use.
POLL_S = inspect.signature(Lock.__init__).parameters["sleep"].default

# The helpers lockcheck's Python adapters share, one directory up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lockcheck_dial import follow_dial_map  # noqa: E402


def connect():
    """The Redis lockcheck started (or the external one it was given)."""
    password = os.environ.get("LOCKCHECK_REDIS_PASSWORD") or None
    username = os.environ.get("LOCKCHECK_REDIS_USER") or None
    tls = os.environ.get("LOCKCHECK_REDIS_TLS") == "1"
    # Each command gets lockcheck's op timeout: one that outlasts it (a
    # paused Redis) ends with an error, indeterminate.
    timeout = int(os.environ.get("LOCKCHECK_OP_TIMEOUT_MS") or 2000) / 1000.0
    opts = dict(username=username, password=password, socket_timeout=timeout, socket_connect_timeout=timeout, ssl=tls)
    if os.environ.get("LOCKCHECK_TOPOLOGY") == "sentinel":
        from redis.sentinel import Sentinel
        follow_dial_map()
        hosts = [tuple(a.rsplit(":", 1)) for a in os.environ["LOCKCHECK_SENTINELS"].split(",")]
        sentinel_password = os.environ.get("LOCKCHECK_SENTINEL_PASSWORD") or None
        sentinel = Sentinel([(h, int(p)) for h, p in hosts], sentinel_kwargs={"password": sentinel_password}, **opts)
        return sentinel.master_for(os.environ["LOCKCHECK_MASTER_NAME"], **opts)
    host, port = os.environ["LOCKCHECK_REDIS_ADDRS"].split(",")[0].rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), **opts)


class TimedRedis(redis.Redis):
    """The client a lease's Lock is given: the adapter's own connection
    pool, and a note of when the last SET it sent that was answered OK
    began (tried, time.monotonic()). redis-py's Lock.do_acquire sends each
    try as self.redis.set(name, token, nx=True, px=...) (redis/lock.py:223
    in Debian's 4.3.4), so the last SET answered OK is the try that took
    the key; the note is taken before the command is sent, never after."""

    tried = None

    def set(self, *args, **kwargs):
        began = time.monotonic()
        ok = super().set(*args, **kwargs)
        if ok:
            self.tried = began
        return ok


class Server:
    def __init__(self, r, shared, watchdog, wake_bound_ms):
        self.r, self.shared, self.watchdog = r, shared, watchdog
        self.wake_bound_ms = wake_bound_ms
        self.out = threading.Lock()  # one reply line at a time
        self.mu = threading.Lock()
        self.locks = {}  # by token (per lease) or by key (--shared)
        self.dogs = {}  # token -> threading.Event that stops its watchdog
        self.seq = 0
        self.acks = {}  # seq -> threading.Event set by lockcheck's ack

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self.out:
            sys.stdout.write(line)
            sys.stdout.flush()

    def lock_for(self, key, token):
        with self.mu:
            if self.shared:
                lk = self.locks.get(key)
                if lk is None:
                    lk = self.locks[key] = self.r.lock(key, thread_local=False)
                return lk
            return self.locks.get(token)

    def serve(self, req):
        reply = {"id": req["id"]}
        try:
            op = req["op"]
            if op == "ping":
                reply["ok"] = bool(self.r.ping())
                reply["wake_bound_ms"] = self.wake_bound_ms
            elif op == "acquire":
                reply.update(self.acquire(req["key"], req["ttl_ms"], req.get("wait_ms", 0), req.get("_read")))
            elif op == "release":
                reply["ok"] = self.release(req["key"], req["token"])
            elif op == "extend":
                reply["ok"] = self.extend(req["key"], req["token"], req["ttl_ms"])
            else:
                reply["error"] = "unknown op " + op
        except (LockNotOwnedError, LockError):
            reply["ok"] = False  # definite: redis-py saw the lease was not ours
        except RedisError as e:
            reply["error"] = "%s: %s" % (type(e).__name__, e)  # indeterminate
        except Exception:  # a bug here: say so and stop, never go silent
            traceback.print_exc()
            os._exit(1)
        self.write(reply)

    def acquire(self, key, ttl_ms, wait_ms, read):
        token = secrets.token_hex(16)
        timed = None
        if self.shared:
            lk = self.lock_for(key, None)
            lk.timeout = ttl_ms / 1000.0
        else:
            timed = TimedRedis(connection_pool=self.r.connection_pool)
            lk = timed.lock(key, timeout=ttl_ms / 1000.0, sleep=POLL_S, thread_local=False)
        if wait_ms > 0:
            got = lk.acquire(blocking=True, blocking_timeout=wait_ms / 1000.0, token=token)
        else:
            got = lk.acquire(blocking=False, token=token)
        if not got:
            return {"ok": False}
        reply = {"ok": True, "token": token}
        if wait_ms > 0 and timed is not None and timed.tried is not None and read is not None:
            # Floored, from when the request was read: no later than the
            # try was sent, as lockcheck reads it (the grant no earlier).
            reply["tried_ms"] = max(0, math.floor((timed.tried - read) * 1000))
        if not self.shared:
            with self.mu:
                self.locks[token] = lk
        if self.watchdog:
            stop = threading.Event()
            with self.mu:
                self.dogs[token] = stop
            threading.Thread(target=self.keep_alive, args=(lk, key, token, ttl_ms, stop), daemon=True).start()
        return reply

    def release(self, key, token):
        with self.mu:
            stop = self.dogs.pop(token, None)
        if stop:
            stop.set()
        lk = self.lock_for(key, token)
        if lk is None:
            return False  # a lease this process never granted
        try:
            lk.release()
        finally:
            if not self.shared:
                with self.mu:
                    self.locks.pop(token, None)
        return True

    def extend(self, key, token, ttl_ms):
        lk = self.lock_for(key, token)
        if lk is None:
            return False
        return bool(lk.extend(ttl_ms / 1000.0, replace_ttl=True))

    def keep_alive(self, lk, key, token, ttl_ms, stop):
        """The watchdog: announce, wait for the ack, extend, report."""
        while not stop.wait(ttl_ms / 3000.0):
            with self.mu:
                self.seq += 1
                seq = self.seq
                acked = self.acks[seq] = threading.Event()
            self.write({"event": "extend", "seq": seq, "key": key, "token": token, "ttl_ms": ttl_ms})
            acked.wait()
            done = {"event": "extended", "seq": seq}
            try:
                done["ok"] = bool(lk.extend(ttl_ms / 1000.0, replace_ttl=True))
            except (LockNotOwnedError, LockError):
                done["ok"] = False
            except RedisError as e:
                done["error"] = "%s: %s" % (type(e).__name__, e)
            self.write(done)
            if not done.get("ok"):
                self.write({"event": "lost", "key": key, "token": token})
                return

    def ack(self, seq):
        with self.mu:
            ev = self.acks.pop(seq, None)
        if ev:
            ev.set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", action="store_true", help="one Lock object per key shared by every thread (redis-py #416)")
    ap.add_argument("--watchdog", action="store_true", help="extend each lease every TTL/3 until released")
    ap.add_argument("--start-delay", type=float, default=0, help="seconds to sleep before serving")
    ap.add_argument("--wake-bound-ms", type=int, default=math.ceil(2 * POLL_S * 1000), help="wake-up bound to declare (default: twice the Lock's sleep); a wrong one is for lockcheck's own tests")
    args = ap.parse_args()
    time.sleep(args.start_delay)
    srv = Server(connect(), args.shared, args.watchdog, args.wake_bound_ms)
    # A thread for every request in flight, as a threaded application
    # has: a blocking acquire holds its thread for its whole wait, and
    # with 64 threads, 200 waiting clients (overrun at --wait 2s) queued
    # behind each other past lockcheck's timeout: 15-20 indeterminate
    # acquires on each key, and every key's check out of its time.
    pool = ThreadPoolExecutor(max_workers=1024)
    for line in sys.stdin:
        msg = json.loads(line)
        if "ack" in msg:
            srv.ack(msg["ack"])
        else:
            msg["_read"] = time.monotonic()  # tried_ms counts from here
            pool.submit(srv.serve, msg)
    pool.shutdown(wait=True)


if __name__ == "__main__":
    main()
