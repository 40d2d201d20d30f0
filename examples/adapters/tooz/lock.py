#!/usr/bin/python3
"""OpenStack tooz's Redis lock, unmodified, as a lockcheck lock process.

    lockcheck verify --lock-cmd "examples/adapters/tooz/lock.py"

One coordinator per process, started with its heartbeat thread
(start(start_heart=True)), as tooz documents: the heart renews every lock
the coordinator holds (RedisLock.heartbeat: redis-py's reacquire) every
half lock_timeout. Each acquire is a get_lock(name).acquire(blocking=False)
on a thread of its own; release is the lock's release(). lock_timeout is
whole seconds: lockcheck's TTL, rounded up.

tooz hands out no deadline and tells the holder nothing when a renewal
fails (its heart logs a warning), so its leases are scopes held until the
holder is done: the ping's reply says so, and lockcheck judges mutual
exclusion only. Debian's python3-tooz (3.1) is what `make survey` installs.

Blocking waits (--wait): the ping's reply declares "wake_bound_ms",
twice the sleep of the redis-py Lock a tooz RedisLock wraps
(client.lock(name, timeout, thread_local=False), tooz/drivers/redis.py:86,
so redis-py's default sleep, 0.1 s), and each acquire that carries
"wait_ms" is tooz's own blocking acquire, acquire(blocking=seconds), which
runs redis-py's loop with blocking_timeout (tooz/drivers/redis.py:105-110,
tooz/utils.py:132-138). No tried_ms: tooz's client is its own, so the
try that took the key is not timed.
"""
import inspect
import json
import math
import os
import secrets
import sys
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from redis.lock import Lock
from tooz import coordination

# The helpers lockcheck's Python adapters share, one directory up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lockcheck_dial import follow_dial_map  # noqa: E402


# POLL_S is the sleep between tries of redis-py's blocking acquire, which
# tooz's RedisLock runs (it sets none of its own).
POLL_S = inspect.signature(Lock.__init__).parameters["sleep"].default

SCOPE = ("tooz renews its locks from the coordinator's heartbeat thread and tells the holder "
         "nothing when a renewal fails: no deadline, no loss reported")



def url(lock_timeout):
    """The tooz URL of the Redis lockcheck started."""
    password = os.environ.get("LOCKCHECK_REDIS_PASSWORD") or ""
    timeout = max(1, int(os.environ.get("LOCKCHECK_OP_TIMEOUT_MS") or 2000) // 1000)
    q = {"lock_timeout": lock_timeout, "timeout": timeout}
    cred = ":%s@" % urllib.parse.quote(password) if password else ""
    if os.environ.get("LOCKCHECK_TOPOLOGY") == "sentinel":
        follow_dial_map()
        sentinels = os.environ["LOCKCHECK_SENTINELS"].split(",")
        q["sentinel"] = os.environ["LOCKCHECK_MASTER_NAME"]
        q["sentinel_fallback"] = sentinels[1:]
        return "redis://%s%s?%s" % (cred, sentinels[0], urllib.parse.urlencode(q, doseq=True))
    addr = os.environ["LOCKCHECK_REDIS_ADDRS"].split(",")[0]
    return "redis://%s%s?%s" % (cred, addr, urllib.parse.urlencode(q))


class Server:
    def __init__(self):
        self.out = threading.Lock()
        self.mu = threading.Lock()
        self.coords = {}  # lock_timeout -> started coordinator
        self.locks = {}  # token -> tooz lock

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self.out:
            sys.stdout.write(line)
            sys.stdout.flush()

    def coord(self, ttl_ms):
        lock_timeout = max(1, math.ceil(ttl_ms / 1000))
        with self.mu:
            c = self.coords.get(lock_timeout)
            if c is None:
                c = coordination.get_coordinator(url(lock_timeout), b"lockcheck-" + secrets.token_hex(8).encode())
                c.start(start_heart=True)
                self.coords[lock_timeout] = c
            return c

    def serve(self, req):
        reply = {"id": req["id"]}
        try:
            op = req["op"]
            if op == "ping":
                self.coord(1000)
                reply.update(ok=True, scope=SCOPE, wake_bound_ms=math.ceil(2 * POLL_S * 1000))
            elif op == "acquire":
                lk = self.coord(req["ttl_ms"]).get_lock(req["key"])
                wait_ms = req.get("wait_ms", 0)
                if lk.acquire(blocking=wait_ms / 1000.0 if wait_ms > 0 else False):
                    token = secrets.token_hex(16)
                    with self.mu:
                        self.locks[token] = lk
                    reply.update(ok=True, token=token)
                else:
                    reply["ok"] = False
            elif op == "release":
                with self.mu:
                    lk = self.locks.pop(req["token"], None)
                reply["ok"] = bool(lk and lk.release())
            else:
                reply["error"] = "tooz has no %s" % op
        except coordination.ToozError as e:
            reply["error"] = "%s: %s" % (type(e).__name__, e)  # indeterminate
        self.write(reply)


def main():
    srv = Server()
    # A thread for every request in flight: a blocking acquire holds its
    # thread for its whole wait (the redispy adapter says why).
    pool = ThreadPoolExecutor(max_workers=1024)
    for line in sys.stdin:
        msg = json.loads(line)
        if "ack" not in msg:
            pool.submit(srv.serve, msg)
    pool.shutdown(wait=True)
    for c in srv.coords.values():
        c.stop()


if __name__ == "__main__":
    main()
